import { GRPC_STATUS_CODES } from '../features/kit/grpc-status.ts';
import {
  type GrpcRouteDoc,
  type HashPolicyDoc,
  type ListenerDoc,
  type RetriesDoc,
  type RouteDoc,
  type VirtualHostDoc,
  type WeightedTargetDoc,
} from '../model/schema.ts';
import { headerFields } from './headers.ts';
import { durationToProto } from '../shared/duration.ts';
import { FAULT_FILTER, headerMatcher, queryMatcher, TYPE } from './common.ts';
import { compact, perMillion, type JsonObject } from '../features/kit/envoy-json.ts';
import { trustsForwardedAddress } from '../features/protection/checks.ts';
import { filterConfigs, routeActionFields, virtualHostFields } from './features.ts';

const REDIRECT_CODE: Record<number, string | undefined> = {
  301: undefined, // MOVED_PERMANENTLY is the proto default
  302: 'FOUND',
  303: 'SEE_OTHER',
  307: 'TEMPORARY_REDIRECT',
  308: 'PERMANENT_REDIRECT',
};

function clusterSpecifier(route: { to?: string; split?: WeightedTargetDoc[] }): JsonObject {
  if (route.to !== undefined) return { cluster: route.to };
  return { weighted_clusters: { clusters: route.split!.map((t) => ({ name: t.service, weight: t.weight })) } };
}

function backOff(r: RetriesDoc): JsonObject | undefined {
  if (!r.backoff) return undefined;
  return compact({
    base_interval: durationToProto(r.backoff.base),
    max_interval: r.backoff.max && durationToProto(r.backoff.max),
  });
}

function hashPolicy(h: HashPolicyDoc): JsonObject {
  const terminal = h.terminal ? { terminal: true } : {};
  if (h.header !== undefined) return { header: { header_name: h.header }, ...terminal };
  if (h.cookie)
    return {
      cookie: compact({ name: h.cookie.name, ttl: h.cookie.ttl && durationToProto(h.cookie.ttl), path: h.cookie.path }),
      ...terminal,
    };
  if (h.sourceIp) return { connection_properties: { source_ip: true }, ...terminal };
  return { query_parameter: { name: h.query! }, ...terminal };
}

function httpRetryPolicy(r: RetriesDoc): JsonObject {
  // Status codes are retried only with this condition: it is added for them.
  const on = [...r.on];
  if (r.statusCodes && !on.includes('retriable-status-codes')) on.push('retriable-status-codes');
  if (r.retriableHeaders && !on.includes('retriable-headers')) on.push('retriable-headers');
  return compact({
    retry_on: on.join(','),
    num_retries: r.count,
    per_try_timeout: r.perTryTimeout && durationToProto(r.perTryTimeout),
    retry_back_off: backOff(r),
    retriable_status_codes: r.statusCodes,
    retriable_headers: r.retriableHeaders?.map(headerMatcher),
    retry_host_predicate: r.retryOtherHosts
      ? [{ name: 'envoy.retry_host_predicates.previous_hosts', typed_config: { '@type': TYPE.previousHosts } }]
      : undefined,
    // An int64: a string in proto3 JSON.
    host_selection_retry_max_attempts:
      r.hostSelectionAttempts === undefined ? undefined : String(r.hostSelectionAttempts),
  });
}

function regexRewrite(r: { pattern: string; substitution: string }): JsonObject {
  return { pattern: { regex: r.pattern }, substitution: r.substitution };
}

/** `v`: the route's virtual host (a feature's route settings may depend on it). */
function httpRoute(r: RouteDoc, v: VirtualHostDoc, forwarded: boolean): JsonObject {
  const m = r.match ?? {};
  const match: JsonObject = {};
  if (m.path !== undefined) match.path = m.path;
  else if (m.regex !== undefined) match.safe_regex = { regex: m.regex };
  else match.prefix = m.prefix ?? '/';
  if (m.caseSensitive === false) match.case_sensitive = false;
  if (m.headers?.length) match.headers = m.headers.map(headerMatcher);
  if (m.query?.length) match.query_parameters = m.query.map(queryMatcher);
  const out: JsonObject = compact({
    name: r.name,
    match,
    ...headerFields(r.headers),
    typed_per_filter_config: filterConfigs(r, forwarded),
  });
  if (r.redirect) {
    const d = r.redirect;
    out.redirect = compact({
      https_redirect: d.https || undefined,
      host_redirect: d.host,
      port_redirect: d.port,
      path_redirect: d.path,
      prefix_rewrite: d.prefix,
      regex_rewrite: d.regex && regexRewrite(d.regex),
      response_code: REDIRECT_CODE[d.code ?? 301],
      strip_query: d.stripQuery || undefined,
    });
  } else if (r.directResponse) {
    out.direct_response = compact({
      status: r.directResponse.status,
      body: r.directResponse.body !== undefined ? { inline_string: r.directResponse.body } : undefined,
    });
  } else {
    out.route = compact({
      ...clusterSpecifier(r),
      prefix_rewrite: r.rewrite?.prefix,
      regex_rewrite: r.rewrite?.regex && regexRewrite(r.rewrite.regex),
      host_rewrite_literal: r.rewrite?.host,
      auto_host_rewrite: r.rewrite?.hostFromService,
      timeout: r.timeout && durationToProto(r.timeout),
      retry_policy: r.retries && httpRetryPolicy(r.retries),
      hash_policy: r.hashPolicy?.map(hashPolicy),
      ...routeActionFields(r, v),
    });
  }
  return out;
}

/** `forwarded`: the listener carrying it trusts x-forwarded-for for client addresses. */
export function buildVirtualHost(v: VirtualHostDoc, forwarded: boolean): JsonObject {
  return compact({
    name: v.name,
    domains: v.domains,
    routes: v.routes.map((r) => httpRoute(r, v, forwarded)),
    ...headerFields(v.headers),
    ...virtualHostFields(v),
    typed_per_filter_config: filterConfigs(v, forwarded),
  });
}

/**
 * `virtualHost` is how each virtual host is built: memoized per document by the caller; `forwarded`
 * says whether the listener trusts x-forwarded-for, which its address rules depend on. The
 * listener's header edits, access rules and local rate limit are the route configuration's, so a
 * change to them reaches open connections at once over RDS (a listener change drains them).
 */
export function buildRouteConfiguration(
  name: string,
  vhosts: VirtualHostDoc[],
  virtualHost: (v: VirtualHostDoc, forwarded: boolean) => JsonObject = buildVirtualHost,
  listener?: Pick<ListenerDoc, 'headers' | 'access' | 'rateLimit' | 'http'>,
): JsonObject {
  const forwarded = listener !== undefined && trustsForwardedAddress(listener);
  return compact({
    name,
    virtual_hosts: vhosts.map((v) => virtualHost(v, forwarded)),
    ...headerFields(listener?.headers),
    typed_per_filter_config:
      listener && filterConfigs({ access: listener.access, rateLimit: listener.rateLimit }, forwarded),
  });
}

/** gRPC clients (gRFC A28) use max_stream_duration as the deadline, not route.timeout. */
export function grpcRoute(r: GrpcRouteDoc): JsonObject {
  const m = r.match ?? {};
  const match: JsonObject = {};
  if (m.service !== undefined) {
    if (m.method !== undefined) match.path = `/${m.service}/${m.method}`;
    else match.prefix = `/${m.service}/`;
  } else if (m.path !== undefined) match.path = m.path;
  else match.prefix = m.prefix ?? '/';
  if (m.headers?.length) match.headers = m.headers.map(headerMatcher);
  return compact({
    name: r.name,
    match,
    route: compact({
      ...clusterSpecifier(r),
      max_stream_duration: r.timeout ? { max_stream_duration: durationToProto(r.timeout) } : undefined,
      hash_policy: r.hashPolicy?.map((h) =>
        h.channelId
          ? { filter_state: { key: 'io.grpc.channel_id' }, ...(h.terminal && { terminal: true }) }
          : { header: { header_name: h.header }, ...(h.terminal && { terminal: true }) },
      ),
      retry_policy:
        r.retries &&
        compact({ retry_on: r.retries.on.join(','), num_retries: r.retries.count, retry_back_off: backOff(r.retries) }),
    }),
    typed_per_filter_config: r.fault && { [FAULT_FILTER]: grpcFault(r.fault) },
  });
}

/** A gRPC route's faults (gRFC A33), as the fault filter's per-route settings. */
function grpcFault(f: NonNullable<GrpcRouteDoc['fault']>): JsonObject {
  return compact({
    '@type': TYPE.fault,
    delay: f.delay && { fixed_delay: durationToProto(f.delay.fixed), percentage: perMillion(f.delay.percent) },
    abort: f.abort && { grpc_status: GRPC_STATUS_CODES[f.abort.status], percentage: perMillion(f.abort.percent) },
  });
}
