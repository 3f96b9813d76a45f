/** Small builders shared by the per-type translators. Output is canonical proto3 JSON. */
import type { HeaderMatchDoc, QueryMatchDoc } from '../model/schema.ts';
import { stringMatcher, type JsonObject } from '../features/kit/envoy-json.ts';

export const TYPE = {
  hcm: 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  router: 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
  fault: 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault',
  upstreamTls: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
  aggregateCluster: 'type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig',
  clusterProvidedLb: 'type.googleapis.com/envoy.extensions.load_balancing_policies.cluster_provided.v3.ClusterProvided',
  downstreamTls: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
  httpProtocolOptions: 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
  tlsInspector: 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector',
  tcpProxy: 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
  previousHosts: 'type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate',
  rbac: 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
} as const;

/** Every dynamic reference goes over the same ADS stream the client opened. */
export function adsConfigSource(): JsonObject {
  return { ads: {}, resource_api_version: 'V3' };
}

/**
 * A certificate-provider instance of a gRPC application's bootstrap, named after the Secret (gRFC
 * A29): the application reads the files itself.
 */
export function providerInstance(secret: string): JsonObject {
  return { instance_name: secret };
}

export const FAULT_FILTER = 'envoy.filters.http.fault';

/** Fault injection, configured per route (typed_per_filter_config); empty here: no route, no fault. */
export function faultFilter(): JsonObject {
  return { name: FAULT_FILTER, typed_config: { '@type': TYPE.fault } };
}

export function routerFilter(): JsonObject {
  return { name: 'envoy.filters.http.router', typed_config: { '@type': TYPE.router } };
}

export function headerMatcher(h: HeaderMatchDoc): JsonObject {
  const out: JsonObject = { name: h.name };
  const sm = stringMatcher(h);
  if (sm) out.string_match = sm;
  else out.present_match = h.present ?? true;
  if (h.invert) out.invert_match = true;
  return out;
}

export function queryMatcher(q: QueryMatchDoc): JsonObject {
  const sm = stringMatcher(q);
  return sm ? { name: q.name, string_match: sm } : { name: q.name, present_match: q.present ?? true };
}
