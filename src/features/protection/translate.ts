/**
 * Edge protection in Envoy's terms. An HTTP listener gets, in the order Envoy evaluates them, the
 * RBAC filter (client addresses and certificate names), JWT authentication, external
 * authorization, the local and the global rate limit, then the router; each only when the listener
 * or one of its virtual hosts uses it. Virtual hosts and routes carry per-filter configurations
 * (the most specific one wins in Envoy, as in the model), and the rate-limit actions their limits
 * are keyed by. A TCP listener gets the network RBAC filter before its proxy.
 */
import type {
  AccessDoc,
  ProtectionListener,
  ProtectionOverrides,
  ProtectionVirtualHost,
  ClientNameDoc,
  ExtAuthDoc,
  GlobalRateLimitDoc,
  JwtDoc,
  JwtProviderDoc,
  JwtRequirementDoc,
  RateLimitDoc,
  RateLimitServiceDoc,
  SanMatchDoc,
} from './schema.ts';
import { cidrRange } from '../../shared/addresses.ts';
import { durationToProto, parseDurationMs } from '../../shared/duration.ts';
import { globToRegex } from '../../shared/glob.ts';
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import { keyedByClientAddress } from './checks.ts';

const TYPE = {
  rbac: 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC',
  rbacPerRoute: 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute',
  networkRbac: 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC',
  jwtAuthn: 'type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication',
  jwtPerRoute: 'type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig',
  extAuthz: 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
  extAuthzPerRoute: 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute',
  localRateLimit: 'type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit',
  rateLimit: 'type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit',
} as const;

export const FILTER = {
  rbac: 'envoy.filters.http.rbac',
  jwt: 'envoy.filters.http.jwt_authn',
  extAuth: 'envoy.filters.http.ext_authz',
  localRateLimit: 'envoy.filters.http.local_ratelimit',
  rateLimit: 'envoy.filters.http.ratelimit',
} as const;

/** Rate-limit actions of local limits keyed per client or header go to their own stage. */
const LOCAL_STAGE = 1;
const KEY_ENTRY = { clientAddress: 'remote_address', header: 'header' } as const;
/**
 * The local rate limiter where no limit applies: in the chain for some routes, it passes the
 * others. Envoy wants a bucket in a per-route config; without filter_enabled it is never used.
 */
const LOCAL_OFF = { '@type': TYPE.localRateLimit, stat_prefix: 'local_rate_limit' };
const LOCAL_OFF_PER_ROUTE = {
  ...LOCAL_OFF,
  token_bucket: { max_tokens: 1, tokens_per_fill: 1, fill_interval: '1s' },
};

// ---------------------------------------------------------------------------------------------
// Names and addresses

/** One of exact, prefix, suffix, glob as an Envoy StringMatcher. */
export function nameMatcher(m: ClientNameDoc): JsonObject {
  if (m.exact !== undefined) return { exact: m.exact };
  if (m.prefix !== undefined) return { prefix: m.prefix };
  if (m.suffix !== undefined) return { suffix: m.suffix };
  return { safe_regex: { regex: globToRegex(m.glob ?? '') } };
}

/** An upstream's subject alternative names, for CertificateValidationContext. */
export function sanMatchers(sans: readonly SanMatchDoc[]): JsonObject[] {
  return sans.map((s) => ({ san_type: s.type === 'dns' ? 'DNS' : 'URI', matcher: nameMatcher(s) }));
}

// ---------------------------------------------------------------------------------------------
// RBAC

/** RBAC principals that hold when any of `ids` does (at least one). */
export function anyPrincipal(ids: JsonObject[]): JsonObject {
  return ids.length === 1 ? ids[0]! : { or_ids: { ids } };
}

/** RBAC principals that hold when all of `ids` do (any principal when there are none). */
export function allPrincipals(ids: JsonObject[]): JsonObject {
  return ids.length === 0 ? { any: true } : ids.length === 1 ? ids[0]! : { and_ids: { ids } };
}

/** RBAC permissions that hold when any of `rules` does (at least one). */
export function anyPermission(rules: JsonObject[]): JsonObject {
  return rules.length === 1 ? rules[0]! : { or_rules: { rules } };
}

/** RBAC permissions that hold when all of `rules` do (any request when there are none). */
export function allPermissions(rules: JsonObject[]): JsonObject {
  return rules.length === 0 ? { any: true } : rules.length === 1 ? rules[0]! : { and_rules: { rules } };
}

/** The client certificate names an RBAC principal accepts. */
export function certificateNamed(names: readonly ClientNameDoc[]): JsonObject {
  return anyPrincipal(names.map((n) => ({ authenticated: { principal_name: nameMatcher(n) } })));
}

/** One ALLOW policy: from an allowed address (if listed), from no denied one, with an allowed name. */
function rbacRules(a: AccessDoc, forwarded: boolean): JsonObject {
  const ip = (c: string) => (forwarded ? { remote_ip: cidrRange(c) } : { direct_remote_ip: cidrRange(c) });
  const parts: JsonObject[] = [];
  if (a.allow) parts.push(anyPrincipal(a.allow.map(ip)));
  if (a.deny) parts.push({ not_id: anyPrincipal(a.deny.map(ip)) });
  if (a.clientNames) parts.push(certificateNamed(a.clientNames));
  // ALLOW is the enum's zero value: canonical JSON leaves it out.
  return { policies: { access: { permissions: [{ any: true }], principals: [allPrincipals(parts)] } } };
}

/** The RBAC filter's config: enforced rules, or shadow rules that only count and log. */
function rbacConfig(a: AccessDoc, forwarded: boolean): JsonObject {
  return a.mode === 'shadow' ? { shadow_rules: rbacRules(a, forwarded) } : { rules: rbacRules(a, forwarded) };
}

/** Envoy's network RBAC filter for a TCP listener's chains. */
export function networkRbacFilter(name: string, a: AccessDoc): JsonObject {
  return {
    name: 'envoy.filters.network.rbac',
    typed_config: { '@type': TYPE.networkRbac, stat_prefix: name, ...rbacConfig(a, false) },
  };
}

// ---------------------------------------------------------------------------------------------
// JWT

/** The requirement-map name of a requirement: the same requirement always has the same name. */
export function requirementName(r: JwtRequirementDoc): string {
  return `${r.optional ? 'optional' : 'required'}:${r.require.join(',')}`;
}

function requirement(r: JwtRequirementDoc): JsonObject {
  const providers: JsonObject[] = r.require.map((p) => ({ provider_name: p }));
  if (r.optional) providers.push({ allow_missing: {} });
  return providers.length === 1 ? providers[0]! : { requires_any: { requirements: providers } };
}

function jwtProvider(p: JwtProviderDoc): JsonObject {
  const remote = p.keys.remote;
  return compact({
    issuer: p.issuer,
    audiences: p.audiences,
    local_jwks: p.keys.inline ? { inline_string: p.keys.inline } : p.keys.file ? { filename: p.keys.file } : undefined,
    remote_jwks: remote && {
      http_uri: {
        uri: `${remote.https ? 'https' : 'http'}://${remote.host ?? remote.service}${remote.path}`,
        cluster: remote.service,
        timeout: durationToProto(remote.timeout ?? '1s'),
      },
      ...(remote.cacheDuration && { cache_duration: durationToProto(remote.cacheDuration) }),
    },
    from_headers: p.from?.headers?.map((h) => compact({ name: h.name, value_prefix: h.prefix })),
    from_params: p.from?.query,
    from_cookies: p.from?.cookies,
    forward: p.forward || undefined,
    forward_payload_header: p.payloadHeader,
    claim_to_headers:
      p.claimHeaders &&
      Object.entries(p.claimHeaders).map(([header, claim]) => ({ header_name: header, claim_name: claim })),
    clock_skew_seconds: p.clockSkew === undefined ? undefined : Math.round((parseDurationMs(p.clockSkew) ?? 0) / 1000),
  });
}

function jwtConfig(jwt: JwtDoc, requirements: ReadonlyMap<string, JwtRequirementDoc>): JsonObject {
  const byName: JsonObject = {};
  for (const p of jwt.providers) byName[p.name] = jwtProvider(p);
  const map: JsonObject = {};
  for (const [name, r] of [...requirements].sort(([a], [b]) => (a < b ? -1 : 1))) map[name] = requirement(r);
  const own = jwt.require && { require: jwt.require, optional: jwt.optional };
  return compact({
    '@type': TYPE.jwtAuthn,
    providers: byName,
    rules: own ? [{ match: { prefix: '/' }, requirement_name: requirementName(own) }] : undefined,
    requirement_map: Object.keys(map).length ? map : undefined,
  });
}

// ---------------------------------------------------------------------------------------------
// External authorization

function headerPatterns(names: readonly string[] | undefined): JsonObject | undefined {
  return names && { patterns: names.map((n) => ({ exact: n, ignore_case: true })) };
}

function extAuthConfig(e: ExtAuthDoc): JsonObject {
  const timeout = durationToProto(e.timeout ?? '200ms');
  const service =
    (e.protocol ?? 'grpc') === 'grpc'
      ? { grpc_service: { envoy_grpc: { cluster_name: e.service }, timeout } }
      : {
          http_service: compact({
            server_uri: { uri: `http://${e.service}`, cluster: e.service, timeout },
            path_prefix: e.pathPrefix,
            authorization_response:
              (e.upstreamHeaders || e.clientHeaders) &&
              compact({
                allowed_upstream_headers: headerPatterns(e.upstreamHeaders),
                allowed_client_headers: headerPatterns(e.clientHeaders),
              }),
          }),
        };
  return compact({
    '@type': TYPE.extAuthz,
    ...service,
    transport_api_version: 'V3',
    // The headers sent to an HTTP authorization server besides Host, Method, Path, Content-Length
    // and Authorization (authorization_request.allowed_headers is deprecated).
    allowed_headers: headerPatterns(e.requestHeaders),
    failure_mode_allow: e.failOpen || undefined,
    with_request_body: e.body && compact({ max_request_bytes: e.body.maxBytes, allow_partial_message: e.body.partial }),
  });
}

// ---------------------------------------------------------------------------------------------
// Rate limits

const STATUS: Record<NonNullable<RateLimitDoc['status']>, string> = {
  429: 'TooManyRequests',
  503: 'ServiceUnavailable',
  403: 'Forbidden',
};

const PERCENT_100 = (key: string) => ({ runtime_key: key, default_value: { numerator: 100 } });

function tokenBucket(r: RateLimitDoc): JsonObject {
  return { max_tokens: r.burst ?? r.requests, tokens_per_fill: r.requests, fill_interval: durationToProto(r.per) };
}

/** A local limit keyed per client address or header value counts each value in a bucket of its own. */
function keyOf(r: RateLimitDoc): 'clientAddress' | 'header' | undefined {
  if (r.by === 'clientAddress') return 'clientAddress';
  return typeof r.by === 'object' ? 'header' : undefined;
}

function localRateLimitConfig(r: RateLimitDoc): JsonObject {
  const key = keyOf(r);
  return compact({
    '@type': TYPE.localRateLimit,
    stat_prefix: 'local_rate_limit',
    status: r.status && r.status !== 429 ? { code: STATUS[r.status] } : undefined,
    token_bucket: tokenBucket(r),
    filter_enabled: PERCENT_100('fleetxds.local_rate_limit.enabled'),
    filter_enforced: PERCENT_100('fleetxds.local_rate_limit.enforced'),
    // An empty descriptor value is a wildcard: a bucket per distinct value (Envoy keeps the most recent).
    descriptors: key && [{ entries: [{ key: KEY_ENTRY[key] }], token_bucket: tokenBucket(r) }],
    stage: key && LOCAL_STAGE,
    // Otherwise a keyed request also takes a token from the shared bucket, and all clients share it.
    always_consume_default_token_bucket: key ? false : undefined,
    local_rate_limit_per_downstream_connection: r.by === 'connection' || undefined,
    enable_x_ratelimit_headers: r.headers === false ? undefined : 'DRAFT_VERSION_03',
  });
}

/** The rate-limit actions a virtual host or route sends for its limits (local keyed, global). */
function rateLimitActions(
  local: RateLimitDoc | false | undefined,
  global: GlobalRateLimitDoc | undefined,
): JsonObject[] {
  const out: JsonObject[] = [];
  const key = local ? keyOf(local) : undefined;
  if (local && key)
    out.push({
      stage: LOCAL_STAGE,
      actions: [
        key === 'clientAddress'
          ? { remote_address: {} }
          : { request_headers: { header_name: (local.by as { header: string }).header, descriptor_key: 'header' } },
      ],
    });
  for (const d of global ?? [])
    out.push({
      actions: d.map((e) => {
        if (e.clientAddress) return { remote_address: {} };
        if (e.header) return { request_headers: { header_name: e.header.name, descriptor_key: e.header.key } };
        if (e.path) return { request_headers: { header_name: ':path', descriptor_key: 'path' } };
        return { generic_key: compact({ descriptor_value: e.generic!.value, descriptor_key: e.generic!.key }) };
      }),
    });
  return out;
}

function globalRateLimitConfig(s: RateLimitServiceDoc): JsonObject {
  return compact({
    '@type': TYPE.rateLimit,
    domain: s.domain,
    timeout: s.timeout && durationToProto(s.timeout),
    failure_mode_deny: s.failOpen === false || undefined,
    enable_x_ratelimit_headers: 'DRAFT_VERSION_03',
    rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: s.service } }, transport_api_version: 'V3' },
  });
}

// ---------------------------------------------------------------------------------------------
// Where the filters go

/** What a route configuration, virtual host or route sets (an override) or turns off (`false`). */
type Overrides = ProtectionOverrides;

/**
 * The per-filter configurations of a route configuration, virtual host or route
 * (typed_per_filter_config). `forwarded`: the listener trusts x-forwarded-for (trustsForwardedAddress).
 */
export function perFilterConfig(o: Overrides, forwarded: boolean): JsonObject | undefined {
  const out: JsonObject = {};
  if (o.access !== undefined)
    out[FILTER.rbac] = { '@type': TYPE.rbacPerRoute, ...(o.access && { rbac: rbacConfig(o.access, forwarded) }) };
  if (o.jwt !== undefined)
    out[FILTER.jwt] = {
      '@type': TYPE.jwtPerRoute,
      ...(o.jwt ? { requirement_name: requirementName(o.jwt) } : { disabled: true }),
    };
  if (o.extAuth === false) out[FILTER.extAuth] = { '@type': TYPE.extAuthzPerRoute, disabled: true };
  if (o.rateLimit !== undefined)
    out[FILTER.localRateLimit] = o.rateLimit ? localRateLimitConfig(o.rateLimit) : LOCAL_OFF_PER_ROUTE;
  return Object.keys(out).length ? out : undefined;
}

/**
 * The rate-limit actions of a virtual host, and of a route given its virtual host's: a route with
 * actions of its own replaces the virtual host's in Envoy, so it carries the virtual host's of the
 * stages it does not set.
 */
export function routeRateLimits(route: Overrides, vhost: readonly JsonObject[]): JsonObject[] | undefined {
  const own = rateLimitActions(route.rateLimit, route.globalRateLimit);
  if (!own.length) return undefined;
  const stages = new Set(own.map((a) => a.stage ?? 0));
  return [...own, ...vhost.filter((a) => !stages.has(a.stage ?? 0))];
}

/** By document: each route of a virtual host asks for them. */
const vhostRateLimits = new WeakMap<Overrides, JsonObject[]>();

export function virtualHostRateLimits(v: Overrides): JsonObject[] {
  let limits = vhostRateLimits.get(v);
  if (!limits) vhostRateLimits.set(v, (limits = rateLimitActions(v.rateLimit, v.globalRateLimit)));
  return limits;
}

/** The protections a listener's virtual hosts and their routes use, and their JWT requirements. */
export interface Used {
  rbac: boolean;
  localRateLimit: boolean;
  /** A rule, limit or hash keyed by the client's address (Envoy's downstream remote address). */
  clientAddress: boolean;
  requirements: Map<string, JwtRequirementDoc>;
}

/** What one virtual host uses, by document: a listener rebuilt after an edit reads the others as they were. */
const usedByVhost = new WeakMap<ProtectionVirtualHost, Used>();

function usedBy(v: ProtectionVirtualHost): Used {
  let used = usedByVhost.get(v);
  if (used) return used;
  used = { rbac: false, localRateLimit: false, clientAddress: false, requirements: new Map() };
  const note = (o: Overrides) => {
    if (o.access) used.rbac = true;
    if (o.rateLimit) used.localRateLimit = true;
    if (o.jwt) used.requirements.set(requirementName(o.jwt), o.jwt);
    if (keyedByClientAddress(o)) used.clientAddress = true;
  };
  note(v);
  for (const r of v.routes) {
    note(r);
    if (r.hashPolicy?.some((h) => h.sourceIp)) used.clientAddress = true;
  }
  usedByVhost.set(v, used);
  return used;
}

export function protectionsUsed(vs: readonly ProtectionVirtualHost[]): Used {
  const used: Used = { rbac: false, localRateLimit: false, clientAddress: false, requirements: new Map() };
  for (const v of vs) {
    const u = usedBy(v);
    used.rbac ||= u.rbac;
    used.localRateLimit ||= u.localRateLimit;
    used.clientAddress ||= u.clientAddress;
    for (const [name, r] of u.requirements) used.requirements.set(name, r);
  }
  return used;
}

/**
 * The HTTP filters before the router, in the order Envoy evaluates them. The listener's own access
 * rules and local rate limit are not here but in its route configuration (perFilterConfig): the
 * filters here pass every request no route configuration, virtual host or route sets them for.
 */
export function protectionFilters(l: ProtectionListener, used: Used): JsonObject[] {
  const out: JsonObject[] = [];
  if (l.access || used.rbac) out.push({ name: FILTER.rbac, typed_config: { '@type': TYPE.rbac } });
  if (l.jwt) {
    const requirements = new Map(used.requirements);
    if (l.jwt.require) {
      const own = { require: l.jwt.require, optional: l.jwt.optional };
      requirements.set(requirementName(own), own);
    }
    out.push({ name: FILTER.jwt, typed_config: jwtConfig(l.jwt, requirements) });
  }
  if (l.extAuth) out.push({ name: FILTER.extAuth, typed_config: extAuthConfig(l.extAuth) });
  if (l.rateLimit || used.localRateLimit) out.push({ name: FILTER.localRateLimit, typed_config: LOCAL_OFF });
  if (l.rateLimitService) out.push({ name: FILTER.rateLimit, typed_config: globalRateLimitConfig(l.rateLimitService) });
  return out;
}

/** The services a listener's protections call (external authorization, rate limits, JWKS). */
export function protectionServices(l: ProtectionListener): string[] {
  const out: string[] = [];
  if (l.extAuth) out.push(l.extAuth.service);
  if (l.rateLimitService) out.push(l.rateLimitService.service);
  for (const p of l.jwt?.providers ?? []) if (p.keys.remote) out.push(p.keys.remote.service);
  return out;
}
