/** Small builders shared by the per-type translators. Output is canonical proto3 JSON. */
import type { HeaderMatchDoc, QueryMatchDoc } from '../model/schema.ts';

export type JsonObject = Record<string, unknown>;

export const TYPE = {
  hcm: 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  router: 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
  upstreamTls: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
  downstreamTls: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
  httpProtocolOptions: 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
  tlsInspector: 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector',
} as const;

/** Every dynamic reference goes over the same ADS stream the client opened. */
export function adsConfigSource(): JsonObject {
  return { ads: {}, resource_api_version: 'V3' };
}

export function routerFilter(): JsonObject {
  return { name: 'envoy.filters.http.router', typed_config: { '@type': TYPE.router } };
}

export function stringMatcher(m: { exact?: string; prefix?: string; regex?: string }): JsonObject | undefined {
  if (m.exact !== undefined) return { exact: m.exact };
  if (m.prefix !== undefined) return { prefix: m.prefix };
  if (m.regex !== undefined) return { safe_regex: { regex: m.regex } };
  return undefined;
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

/** Drops undefined values so the JSON is canonical (proto3 omits unset fields). */
export function compact<T extends JsonObject>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}
