import type { GrpcServiceDoc, ListenerDoc, VirtualHostDoc } from '../model/schema.ts';
import { durationToProto } from '../shared/duration.ts';
import { adsConfigSource, faultFilter, routerFilter, TYPE } from './common.ts';
import { compact, type JsonObject } from '../features/kit/envoy-json.ts';
import {
  connectionManagerFields,
  httpFilters,
  listenerAccessLogs,
  networkFilters,
  type ListenerHttpFilters,
} from './features.ts';

/**
 * An HTTP connection manager routing over RDS. `fields`: what the listener's features set; the
 * upgrades go last, as Envoy's own configs list them. None for gRPC clients' API listeners.
 */
function httpConnectionManager(
  statPrefix: string,
  routeConfigName: string,
  accessLog: JsonObject[] = [],
  fields: JsonObject = {},
  filters: JsonObject[] = [],
): JsonObject {
  const { upgrade_configs, ...settings } = fields;
  return {
    '@type': TYPE.hcm,
    stat_prefix: statPrefix,
    // Domains are host names: a request to shop.example.com:8443 on the listener of port 8443 is
    // matched as shop.example.com (a port that is not the listener's stays, and matches no name).
    strip_matching_host_port: true,
    ...settings,
    rds: { config_source: adsConfigSource(), route_config_name: routeConfigName },
    http_filters: [...filters, routerFilter()],
    ...(accessLog.length && { access_log: accessLog }),
    ...(upgrade_configs !== undefined && { upgrade_configs }),
  };
}

/** `http`: the chain speaks HTTP and offers h2 and http/1.1 by ALPN; a TCP chain offers none. */
function downstreamTls(secret: string, clientCa: string | undefined, http: boolean): JsonObject {
  const common: JsonObject = {
    ...(http && { alpn_protocols: ['h2', 'http/1.1'] }),
    tls_certificate_sds_secret_configs: [{ name: secret, sds_config: adsConfigSource() }],
  };
  const ctx: JsonObject = { '@type': TYPE.downstreamTls, common_tls_context: common };
  if (clientCa) {
    common.validation_context_sds_secret_config = { name: clientCa, sds_config: adsConfigSource() };
    ctx.require_client_certificate = true;
  }
  return { name: 'envoy.transport_sockets.tls', typed_config: ctx };
}

/** Envoy's TCP proxy to one service or a weighted split (a connection picks one). */
function tcpProxy(
  statPrefix: string,
  t: { to?: string; split?: { service: string; weight: number }[] } & {
    idleTimeout?: string;
    maxConnectAttempts?: number;
  },
  accessLog: JsonObject[],
): JsonObject {
  return {
    name: 'envoy.filters.network.tcp_proxy',
    typed_config: compact({
      '@type': TYPE.tcpProxy,
      stat_prefix: statPrefix,
      cluster: t.to,
      weighted_clusters: t.split && {
        clusters: t.split.filter((w) => w.weight > 0).map((w) => ({ name: w.service, weight: w.weight })),
      },
      idle_timeout: t.idleTimeout && durationToProto(t.idleTimeout),
      max_connect_attempts: t.maxConnectAttempts,
      access_log: accessLog.length ? accessLog : undefined,
    }),
  };
}

/** A listener, the extension configs its filters name, and the names they have (ListenerHttpFilters). */
export interface BuiltListener {
  readonly json: JsonObject;
  readonly extensions: readonly JsonObject[];
  readonly renamed: ReadonlyMap<string, string>;
}

const NO_HTTP_FILTERS: ListenerHttpFilters = { filters: [], extensions: [], renamed: new Map() };

/**
 * An Envoy listener: the HTTP connection manager (routes over RDS, named after the listener), or
 * for a TCP listener the TCP proxy, in one filter chain per certificate. With `tls.sni`, a TLS
 * inspector reads the SNI and each entry's server names select its chain; the default chain (no
 * match) carries `tls.secret`. Passthrough names get chains of their own that proxy the TLS bytes
 * untouched (matched on SNI with transport protocol tls, ahead of the terminated chains).
 * `vhosts` are the listener's virtual hosts: the protections they use put filters in its chain.
 * Policy filters name extension configs (ECDS) served beside the listener.
 */
export function buildListener(l: ListenerDoc, vhosts: readonly VirtualHostDoc[] = []): BuiltListener {
  const tcpLogs = listenerAccessLogs(l, true);
  const network = networkFilters(l);
  const http = l.tcp ? NO_HTTP_FILTERS : httpFilters(l, vhosts);
  const filters = l.tcp
    ? [...network, tcpProxy(l.name, l.tcp, tcpLogs)]
    : [
        {
          name: 'envoy.filters.network.http_connection_manager',
          typed_config: httpConnectionManager(
            l.name,
            l.name,
            listenerAccessLogs(l, false),
            connectionManagerFields(l, vhosts),
            http.filters,
          ),
        },
      ];
  const chains: JsonObject[] = [];
  l.passthrough?.forEach((p, i) =>
    chains.push({
      name: `passthrough-${i}`,
      filter_chain_match: { server_names: p.serverNames, transport_protocol: 'tls' },
      filters: [...network, tcpProxy(`${l.name}.passthrough`, { to: p.to }, tcpLogs)],
    }),
  );
  for (const e of l.tls?.sni ?? []) {
    chains.push({
      name: `sni-${e.secret}`,
      filter_chain_match: { server_names: e.serverNames },
      filters,
      transport_socket: downstreamTls(e.secret, l.tls!.clientCa, !l.tcp),
    });
  }
  // The default chain: HTTP or TCP; none for passthrough names alone (other names are refused).
  if (l.virtualHosts || l.tcp)
    chains.push(
      l.tls ? { filters, transport_socket: downstreamTls(l.tls.secret, l.tls.clientCa, !l.tcp) } : { filters },
    );
  const out: JsonObject = {
    name: l.name,
    address: { socket_address: { address: l.address ?? '0.0.0.0', port_value: l.port } },
    filter_chains: chains,
  };
  if (l.tls?.sni || l.passthrough)
    out.listener_filters = [
      { name: 'envoy.filters.listener.tls_inspector', typed_config: { '@type': TYPE.tlsInspector } },
    ];
  return { json: out, extensions: http.extensions, renamed: http.renamed };
}

/** A proxyless gRPC target (gRFC A27): an API listener named after the target, routes over RDS. */
export function buildApiListener(g: GrpcServiceDoc): JsonObject {
  // The fault filter only where a route injects faults: its routes carry the settings (grpcFault).
  const filters = g.routes.some((r) => r.fault) ? [faultFilter()] : [];
  return {
    name: g.target,
    api_listener: { api_listener: httpConnectionManager(g.name, g.target, [], {}, filters) },
  };
}
