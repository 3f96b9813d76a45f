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

/** An Envoy listener: one filter chain with the HTTP connection manager; routes over RDS (named after the listener). */
export function buildListener(l: ListenerDoc): JsonObject {
  const chain: JsonObject = {
    filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: httpConnectionManager(l.name, l.name) }],
  };
  if (l.tls) {
    const common: JsonObject = {
      alpn_protocols: ['h2', 'http/1.1'],
      tls_certificate_sds_secret_configs: [{ name: l.tls.secret, sds_config: adsConfigSource() }],
    };
    const ctx: JsonObject = { '@type': TYPE.downstreamTls, common_tls_context: common };
    if (l.tls.clientCa) {
      common.validation_context_sds_secret_config = { name: l.tls.clientCa, sds_config: adsConfigSource() };
      ctx.require_client_certificate = true;
    }
    chain.transport_socket = { name: 'envoy.transport_sockets.tls', typed_config: ctx };
  }
  return {
    name: l.name,
    address: { socket_address: { address: l.address ?? '0.0.0.0', port_value: l.port } },
    filter_chains: [chain],
  };
}

/** A proxyless gRPC target (gRFC A27): an API listener named after the target, routes over RDS. */
export function buildApiListener(g: GrpcServiceDoc): JsonObject {
  return {
    name: g.target,
    api_listener: { api_listener: httpConnectionManager(g.name, g.target) },
  };
}
