/**
 * Edge protection rules a schema cannot express: addresses that parse, one way to match a name,
 * keys that are public and parse, services that speak the protocol a filter needs, and what a
 * virtual host asks of every listener that carries it (JWT providers, a rate-limit service, mTLS).
 */
import { cidrRange } from '../../shared/addresses.ts';
import { Codes, type PathSegment } from '../../shared/diagnostics.ts';
import { parseDurationMs } from '../../shared/duration.ts';
import { globToRegex } from '../../shared/glob.ts';
import type { FeatureCheck, ServiceView } from '../kit/feature.ts';
import type {
  AccessDoc,
  ClientNameDoc,
  GlobalRateLimitDoc,
  JwtDoc,
  ProtectionListener,
  ProtectionOverrides,
  ProtectionVirtualHost,
  RateLimitDoc,
} from './schema.ts';

/** Members of a JWK that only a private or symmetric key has. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'] as const;
/** Envoy's local rate limiter refills no faster than this. */
const MIN_FILL_MS = 50;

export function checkNameMatch(m: ClientNameDoc, path: readonly PathSegment[], c: FeatureCheck): void {
  const set = (['exact', 'prefix', 'suffix', 'glob'] as const).filter((k) => m[k] !== undefined);
  if (set.length !== 1)
    c.error(
      Codes.INVALID_VALUE,
      path,
      set.length
        ? `use only one of exact, prefix, suffix, glob (got ${set.join(', ')})`
        : 'needs one of exact, prefix, suffix, glob',
    );
  else if (m.glob !== undefined) c.regex(globToRegex(m.glob), [...path, 'glob']);
}

/** Each entry of `list` (at `path`) is an IP address or a CIDR block. */
export function checkCidrs(list: readonly string[] | undefined, path: readonly PathSegment[], c: FeatureCheck): void {
  list?.forEach((cidr, i) => {
    if (!cidrRange(cidr))
      c.error(
        Codes.INVALID_VALUE,
        [...path, i],
        `"${cidr}" is not an IP address or CIDR block (e.g. 10.0.0.0/8, 2001:db8::/32)`,
      );
  });
}

export function checkAccess(a: AccessDoc, path: readonly PathSegment[], c: FeatureCheck): void {
  for (const list of ['allow', 'deny'] as const) checkCidrs(a[list], [...path, list], c);
  a.clientNames?.forEach((n, i) => checkNameMatch(n, [...path, 'clientNames', i], c));
}

/** A JWKS served to every proxy: JSON with public keys only. */
function jwksProblem(text: string): string | undefined {
  let jwks: unknown;
  try {
    jwks = JSON.parse(text);
  } catch (err) {
    return `the JWKS is not JSON: ${(err as Error).message}`;
  }
  const keys = (jwks as { keys?: unknown }).keys;
  if (!Array.isArray(keys) || !keys.length) return 'a JWKS needs a non-empty "keys" array';
  for (const [i, k] of keys.entries()) {
    if (typeof k !== 'object' || k === null || typeof (k as { kty?: unknown }).kty !== 'string')
      return `keys[${i}] has no "kty"`;
    const priv = PRIVATE_MEMBERS.filter((m) => m in k);
    if (priv.length)
      return (
        `keys[${i}] holds private or symmetric key material (${priv.join(', ')}): every proxy would get it; ` +
        'give the public keys only'
      );
  }
  return undefined;
}

function needGrpc(s: ServiceView | undefined, path: readonly PathSegment[], what: string, c: FeatureCheck) {
  if (s && s.protocol !== 'grpc' && s.protocol !== 'http2')
    c.error(
      Codes.INVALID_VALUE,
      path,
      `${what} speaks gRPC: service "${s.name}" needs protocol: grpc (it is ${s.protocol ?? 'http1'})`,
    );
}

function checkJwtProviders(jwt: JwtDoc, c: FeatureCheck): void {
  const names = new Set<string>();
  jwt.providers.forEach((p, i) => {
    const at: readonly PathSegment[] = ['jwt', 'providers', i];
    if (names.has(p.name)) c.error(Codes.CONFLICT, [...at, 'name'], `provider "${p.name}" is defined twice`);
    names.add(p.name);
    const sources = (['inline', 'file', 'remote'] as const).filter((k) => p.keys[k] !== undefined);
    if (sources.length !== 1)
      c.error(Codes.INVALID_VALUE, [...at, 'keys'], 'keys needs exactly one of inline, file, remote');
    if (p.keys.inline !== undefined) {
      const problem = jwksProblem(p.keys.inline);
      if (problem) c.error(Codes.INVALID_VALUE, [...at, 'keys', 'inline'], problem);
    }
    if (p.keys.remote) c.service([...at, 'keys', 'remote', 'service'], p.keys.remote.service);
    if (p.clockSkew !== undefined && (parseDurationMs(p.clockSkew) ?? 0) % 1000 !== 0)
      c.error(Codes.INVALID_VALUE, [...at, 'clockSkew'], 'Envoy counts clock skew in whole seconds');
  });
  jwt.require?.forEach((n, i) => {
    if (!names.has(n))
      c.error(Codes.UNKNOWN_REFERENCE, ['jwt', 'require', i], `provider "${n}" is not in jwt.providers`);
  });
}

export function checkRateLimit(rl: RateLimitDoc, path: readonly PathSegment[], c: FeatureCheck): void {
  if ((parseDurationMs(rl.per) ?? 0) < MIN_FILL_MS)
    c.error(Codes.INVALID_VALUE, [...path, 'per'], `Envoy refills a bucket at most every ${MIN_FILL_MS}ms`);
}

export function checkGlobalRateLimit(g: GlobalRateLimitDoc, path: readonly PathSegment[], c: FeatureCheck) {
  g.forEach((d, i) =>
    d.forEach((e, j) => {
      const n = Object.keys(e).length;
      if (n !== 1)
        c.error(Codes.INVALID_VALUE, [...path, i, j], 'an entry is one of clientAddress, header, path, generic');
    }),
  );
}

/** A listener's own protections. */
export function checkListenerProtection(l: ProtectionListener, c: FeatureCheck): void {
  if (l.access) {
    checkAccess(l.access, ['access'], c);
    if (l.access.allow || l.access.deny) warnForwardedAddress(l, ['access'], 'its address rules', c);
    if (l.access.clientNames && !l.tls?.clientCa)
      c.error(
        Codes.INVALID_VALUE,
        ['access', 'clientNames'],
        'client certificate names need client certificates: set tls.clientCa',
      );
  }
  if (l.tcp || (!l.virtualHosts && l.passthrough)) {
    for (const k of ['jwt', 'extAuth', 'rateLimit', 'rateLimitService'] as const)
      if (l[k] !== undefined)
        c.error(Codes.INVALID_VALUE, [k], `${k} protects HTTP requests: this listener proxies TCP`);
    return;
  }
  if (l.jwt) checkJwtProviders(l.jwt, c);
  if (l.extAuth) {
    const e = l.extAuth;
    const s = c.service(['extAuth', 'service'], e.service);
    if ((e.protocol ?? 'grpc') === 'grpc') {
      needGrpc(s, ['extAuth', 'service'], 'external authorization (protocol grpc)', c);
      for (const k of ['pathPrefix', 'requestHeaders', 'upstreamHeaders', 'clientHeaders'] as const)
        if (e[k] !== undefined)
          c.error(
            Codes.INVALID_VALUE,
            ['extAuth', k],
            `${k} is for protocol http (a gRPC server gets every header and says what to add)`,
          );
    }
  }
  if (l.rateLimit) {
    checkRateLimit(l.rateLimit, ['rateLimit'], c);
    if (l.rateLimit.by === 'clientAddress' || typeof l.rateLimit.by === 'object')
      c.error(
        Codes.INVALID_VALUE,
        ['rateLimit', 'by'],
        'a limit per client address or header value is set on virtual hosts or routes (where Envoy reads the key)',
      );
  }
  if (l.rateLimitService) {
    const s = c.service(['rateLimitService', 'service'], l.rateLimitService.service);
    needGrpc(s, ['rateLimitService', 'service'], 'the rate-limit service protocol', c);
  }
}

/** What a virtual host or route sets, checked on its own. */
export function checkOverrides(o: ProtectionOverrides, path: readonly PathSegment[], c: FeatureCheck): void {
  if (o.access) checkAccess(o.access, [...path, 'access'], c);
  if (o.rateLimit) checkRateLimit(o.rateLimit, [...path, 'rateLimit'], c);
  if (o.globalRateLimit) checkGlobalRateLimit(o.globalRateLimit, [...path, 'globalRateLimit'], c);
}

/**
 * Whether a listener's client address may come from x-forwarded-for: only when the operator says
 * how many proxies in front of Envoy are trusted. Otherwise address rules match the connection's
 * peer (`direct_remote_ip`), since Envoy's own default takes the last x-forwarded-for entry, which
 * any client writes.
 */
export function trustsForwardedAddress(l: Pick<ProtectionListener, 'http'>): boolean {
  return (l.http?.xffNumTrustedHops ?? 0) > 0;
}

/** Whether a limit is keyed by the client's address (Envoy's downstream remote address). */
export function keyedByClientAddress(o: Pick<ProtectionOverrides, 'rateLimit' | 'globalRateLimit'>): boolean {
  return (
    (o.rateLimit !== undefined && o.rateLimit !== false && o.rateLimit.by === 'clientAddress') ||
    (o.globalRateLimit ?? []).some((d) => d.some((e) => e.clientAddress))
  );
}

/**
 * Address rules, limits and hashes on an HTTP listener whose client address comes from
 * x-forwarded-for: warned, since a client that reaches Envoy without passing through the proxies
 * the listener trusts writes that header itself.
 */
function warnForwardedAddress(l: ProtectionListener, path: readonly PathSegment[], what: string, c: FeatureCheck) {
  if (l.tcp) return;
  const hops = l.http?.xffNumTrustedHops ?? 0;
  const source = trustsForwardedAddress(l)
    ? `the address x-forwarded-for names ${hops} hop${hops === 1 ? '' : 's'} in (http.xffNumTrustedHops)`
    : l.http?.useRemoteAddress === false
      ? 'the last x-forwarded-for address (http.useRemoteAddress: false)'
      : undefined;
  if (source)
    c.warn(
      Codes.INVALID_VALUE,
      path,
      `listener "${l.name}" matches ${what} against ${source}: a client that reaches Envoy ` +
        'without passing through the trusted proxies chooses that address',
    );
}

/** What a virtual host needs from each listener carrying it, with where it says so. */
interface Need {
  path: readonly PathSegment[];
  clientAddress?: true;
  jwtProviders?: readonly string[];
  rateLimitService?: true;
  clientCertificates?: true;
}

const NEEDS = new WeakMap<ProtectionVirtualHost, Need[]>();

function needsOf(v: ProtectionVirtualHost): Need[] {
  let needs = NEEDS.get(v);
  if (needs) return needs;
  needs = [];
  const add = (o: ProtectionOverrides, path: readonly PathSegment[]) => {
    if (o.jwt) needs.push({ path: [...path, 'jwt'], jwtProviders: o.jwt.require });
    if (o.globalRateLimit) needs.push({ path: [...path, 'globalRateLimit'], rateLimitService: true });
    if (o.access && o.access.clientNames)
      needs.push({ path: [...path, 'access', 'clientNames'], clientCertificates: true });
    if (o.access && (o.access.allow || o.access.deny)) needs.push({ path: [...path, 'access'], clientAddress: true });
    if (keyedByClientAddress(o)) needs.push({ path, clientAddress: true });
  };
  add(v, []);
  v.routes.forEach((route, i) => {
    add(route, ['routes', i]);
    const h = route.hashPolicy?.findIndex((p) => p.sourceIp) ?? -1;
    if (h >= 0) needs.push({ path: ['routes', i, 'hashPolicy', h], clientAddress: true });
  });
  NEEDS.set(v, needs);
  return needs;
}

/** Each listener carrying `v` has what its protections name: JWT providers, a rate-limit service, mTLS. */
export function checkCarriedProtection(l: ProtectionListener, v: ProtectionVirtualHost, c: FeatureCheck): void {
  for (const n of needsOf(v)) {
    if (n.clientAddress) warnForwardedAddress(l, n.path, 'what this virtual host keys by client address', c);
    if (n.jwtProviders) {
      const known = new Set(l.jwt?.providers.map((p) => p.name));
      n.jwtProviders.forEach((p, i) => {
        if (!known.has(p))
          c.error(
            Codes.UNKNOWN_REFERENCE,
            [...n.path, 'require', i],
            `listener "${l.name}" carries this virtual host and has no JWT provider "${p}" ` +
              '(define it in its jwt.providers)',
          );
      });
    }
    if (n.rateLimitService && !l.rateLimitService)
      c.error(
        Codes.INVALID_VALUE,
        n.path,
        `listener "${l.name}" carries this virtual host and has no rateLimitService to send descriptors to`,
      );
    if (n.clientCertificates && !l.tls?.clientCa)
      c.error(
        Codes.INVALID_VALUE,
        n.path,
        `listener "${l.name}" carries this virtual host and asks for no client certificate (tls.clientCa)`,
      );
  }
}
