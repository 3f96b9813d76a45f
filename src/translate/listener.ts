import type { GrpcServiceDoc, ListenerDoc } from '../model/schema.ts';
import { adsConfigSource, routerFilter, TYPE, type JsonObject } from './common.ts';

function httpConnectionManager(statPrefix: string, routeConfigName: string): JsonObject {
  return {
    '@type': TYPE.hcm,
    stat_prefix: statPrefix,
    rds: { config_source: adsConfigSource(), route_config_name: routeConfigName },
    http_filters: [routerFilter()],
  };
}

function downstreamTls(secret: string, clientCa: string | undefined): JsonObject {
  const common: JsonObject = {
    alpn_protocols: ['h2', 'http/1.1'],
    tls_certificate_sds_secret_configs: [{ name: secret, sds_config: adsConfigSource() }],
  };
  const ctx: JsonObject = { '@type': TYPE.downstreamTls, common_tls_context: common };
  if (clientCa) {
    common.validation_context_sds_secret_config = { name: clientCa, sds_config: adsConfigSource() };
    ctx.require_client_certificate = true;
  }
  return { name: 'envoy.transport_sockets.tls', typed_config: ctx };
}

/**
 * An Envoy listener: the HTTP connection manager (routes over RDS, named after the listener) in
 * one filter chain per certificate. With `tls.sni`, a TLS inspector reads the SNI and each entry's
 * server names select its chain; the default chain (no match) carries `tls.secret`.
 */
export function buildListener(l: ListenerDoc): JsonObject {
  const filters = [
    { name: 'envoy.filters.network.http_connection_manager', typed_config: httpConnectionManager(l.name, l.name) },
  ];
  const chains: JsonObject[] = [];
  for (const e of l.tls?.sni ?? []) {
    chains.push({
      name: `sni-${e.secret}`,
      filter_chain_match: { server_names: e.serverNames },
      filters,
      transport_socket: downstreamTls(e.secret, l.tls!.clientCa),
    });
  }
  chains.push(l.tls ? { filters, transport_socket: downstreamTls(l.tls.secret, l.tls.clientCa) } : { filters });
  const out: JsonObject = {
    name: l.name,
    address: { socket_address: { address: l.address ?? '0.0.0.0', port_value: l.port } },
    filter_chains: chains,
  };
  if (l.tls?.sni)
    out.listener_filters = [
      { name: 'envoy.filters.listener.tls_inspector', typed_config: { '@type': TYPE.tlsInspector } },
    ];
  return out;
}

/** A proxyless gRPC target (gRFC A27): an API listener named after the target, routes over RDS. */
export function buildApiListener(g: GrpcServiceDoc): JsonObject {
  return {
    name: g.target,
    api_listener: { api_listener: httpConnectionManager(g.name, g.target) },
  };
}
