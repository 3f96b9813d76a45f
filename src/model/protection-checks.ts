/**
 * Edge protection rules a schema cannot express: addresses that parse, one way to match a name,
 * keys that are public and parse, services that speak the protocol a filter needs, and what a
 * virtual host asks of every listener that carries it (JWT providers, a rate-limit service, mTLS).
 */
import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import { parseDurationMs } from '../shared/duration.ts';
import { globToRegex } from '../shared/glob.ts';
import { cidrRange } from './addresses.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import type { AccessDoc, ClientNameDoc, GlobalRateLimitDoc, JwtDoc, RateLimitDoc } from './protection-schema.ts';
import { checkRegex } from './regex-check.ts';
import type { ListenerDoc, RouteDoc, ServiceDoc, VirtualHostDoc } from './schema.ts';

/** Members of a JWK that only a private or symmetric key has. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'] as const;
/** Envoy's local rate limiter refills no faster than this. */
const MIN_FILL_MS = 50;

export function checkNameMatch(m: ClientNameDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  const set = (['exact', 'prefix', 'suffix', 'glob'] as const).filter((k) => m[k] !== undefined);
  if (set.length !== 1)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      path,
      set.length
        ? `use only one of exact, prefix, suffix, glob (got ${set.join(', ')})`
        : 'needs one of exact, prefix, suffix, glob',
    );
  else if (m.glob !== undefined) checkRegex(globToRegex(m.glob), [...path, 'glob'], r, sink);
}

/** Each entry of `list` (at `path`) is an IP address or a CIDR block. */
export function checkCidrs(
  list: readonly string[] | undefined,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
): void {
  list?.forEach((c, i) => {
    if (!cidrRange(c))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, i],
        `"${c}" is not an IP address or CIDR block (e.g. 10.0.0.0/8, 2001:db8::/32)`,
      );
  });
}

export function checkAccess(a: AccessDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  for (const list of ['allow', 'deny'] as const) checkCidrs(a[list], [...path, list], r, sink);
  a.clientNames?.forEach((n, i) => checkNameMatch(n, [...path, 'clientNames', i], r, sink));
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

function needGrpc(s: ServiceDoc | undefined, path: PathSegment[], what: string, r: DocRef, sink: DiagnosticSink) {
  if (s && s.protocol !== 'grpc' && s.protocol !== 'http2')
    sink.error(
      Codes.INVALID_VALUE,
      r,
      path,
      `${what} speaks gRPC: service "${s.name}" needs protocol: grpc (it is ${s.protocol ?? 'http1'})`,
    );
}

function checkJwtProviders(jwt: JwtDoc, r: DocRef, sink: DiagnosticSink, needService: NeedService): void {
  const names = new Set<string>();
  jwt.providers.forEach((p, i) => {
    const at: PathSegment[] = ['jwt', 'providers', i];
    if (names.has(p.name)) sink.error(Codes.CONFLICT, r, [...at, 'name'], `provider "${p.name}" is defined twice`);
    names.add(p.name);
    const sources = (['inline', 'file', 'remote'] as const).filter((k) => p.keys[k] !== undefined);
    if (sources.length !== 1)
      sink.error(Codes.INVALID_VALUE, r, [...at, 'keys'], 'keys needs exactly one of inline, file, remote');
    if (p.keys.inline !== undefined) {
      const problem = jwksProblem(p.keys.inline);
      if (problem) sink.error(Codes.INVALID_VALUE, r, [...at, 'keys', 'inline'], problem);
    }
    if (p.keys.remote) needService(r, [...at, 'keys', 'remote', 'service'], p.keys.remote.service);
    if (p.clockSkew !== undefined && (parseDurationMs(p.clockSkew) ?? 0) % 1000 !== 0)
      sink.error(Codes.INVALID_VALUE, r, [...at, 'clockSkew'], 'Envoy counts clock skew in whole seconds');
  });
  jwt.require?.forEach((n, i) => {
    if (!names.has(n))
      sink.error(Codes.UNKNOWN_REFERENCE, r, ['jwt', 'require', i], `provider "${n}" is not in jwt.providers`);
  });
}

export function checkRateLimit(rl: RateLimitDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  if ((parseDurationMs(rl.per) ?? 0) < MIN_FILL_MS)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'per'], `Envoy refills a bucket at most every ${MIN_FILL_MS}ms`);
}

export function checkGlobalRateLimit(g: GlobalRateLimitDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink) {
  g.forEach((d, i) =>
    d.forEach((e, j) => {
      const n = Object.keys(e).length;
      if (n !== 1)
        sink.error(Codes.INVALID_VALUE, r, [...path, i, j], 'an entry is one of clientAddress, header, path, generic');
    }),
  );
}

/** A listener's own protections. */
export function checkListenerProtection(
  l: ListenerDoc,
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): void {
  if (l.access) {
    checkAccess(l.access, ['access'], r, sink);
    if (l.access.allow || l.access.deny) warnForwardedAddress(l, ['access'], 'its address rules', r, sink);
    if (l.access.clientNames && !l.tls?.clientCa)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['access', 'clientNames'],
        'client certificate names need client certificates: set tls.clientCa',
      );
  }
  if (l.tcp || (!l.virtualHosts && l.passthrough)) {
    for (const k of ['jwt', 'extAuth', 'rateLimit', 'rateLimitService'] as const)
      if (l[k] !== undefined)
        sink.error(Codes.INVALID_VALUE, r, [k], `${k} protects HTTP requests: this listener proxies TCP`);
    return;
  }
  if (l.jwt) checkJwtProviders(l.jwt, r, sink, needService);
  if (l.extAuth) {
    const e = l.extAuth;
    const s = needService(r, ['extAuth', 'service'], e.service);
    if ((e.protocol ?? 'grpc') === 'grpc') {
      needGrpc(s, ['extAuth', 'service'], 'external authorization (protocol grpc)', r, sink);
      for (const k of ['pathPrefix', 'requestHeaders', 'upstreamHeaders', 'clientHeaders'] as const)
        if (e[k] !== undefined)
          sink.error(
            Codes.INVALID_VALUE,
            r,
            ['extAuth', k],
            `${k} is for protocol http (a gRPC server gets every header and says what to add)`,
          );
    }
  }
  if (l.rateLimit) {
    checkRateLimit(l.rateLimit, ['rateLimit'], r, sink);
    if (l.rateLimit.by === 'clientAddress' || typeof l.rateLimit.by === 'object')
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['rateLimit', 'by'],
        'a limit per client address or header value is set on virtual hosts or routes (where Envoy reads the key)',
      );
  }
  if (l.rateLimitService) {
    const s = needService(r, ['rateLimitService', 'service'], l.rateLimitService.service);
    needGrpc(s, ['rateLimitService', 'service'], 'the rate-limit service protocol', r, sink);
  }
}

/** What a virtual host or route sets, checked on its own. */
function checkOverrides(
  o: Pick<RouteDoc, 'access' | 'rateLimit' | 'globalRateLimit'>,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
): void {
  if (o.access) checkAccess(o.access, [...path, 'access'], r, sink);
  if (o.rateLimit) checkRateLimit(o.rateLimit, [...path, 'rateLimit'], r, sink);
  if (o.globalRateLimit) checkGlobalRateLimit(o.globalRateLimit, [...path, 'globalRateLimit'], r, sink);
}

export function checkVirtualHostProtection(v: VirtualHostDoc, r: DocRef, sink: DiagnosticSink): void {
  checkOverrides(v, [], r, sink);
  v.routes.forEach((route, i) => checkOverrides(route, ['routes', i], r, sink));
}

/**
 * Whether a listener's client address may come from x-forwarded-for: only when the operator says
 * how many proxies in front of Envoy are trusted. Otherwise address rules match the connection's
 * peer (`direct_remote_ip`), since Envoy's own default takes the last x-forwarded-for entry, which
 * any client writes.
 */
export function trustsForwardedAddress(l: Pick<ListenerDoc, 'http'>): boolean {
  return (l.http?.xffNumTrustedHops ?? 0) > 0;
}

/** Whether a limit is keyed by the client's address (Envoy's downstream remote address). */
export function keyedByClientAddress(o: Pick<RouteDoc, 'rateLimit' | 'globalRateLimit'>): boolean {
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
function warnForwardedAddress(l: ListenerDoc, path: PathSegment[], what: string, r: DocRef, sink: DiagnosticSink) {
  if (l.tcp) return;
  const hops = l.http?.xffNumTrustedHops ?? 0;
  const source = trustsForwardedAddress(l)
    ? `the address x-forwarded-for names ${hops} hop${hops === 1 ? '' : 's'} in (http.xffNumTrustedHops)`
    : l.http?.useRemoteAddress === false
      ? 'the last x-forwarded-for address (http.useRemoteAddress: false)'
      : undefined;
  if (source)
    sink.warn(
      Codes.INVALID_VALUE,
      r,
      path,
      `listener "${l.name}" matches ${what} against ${source}: a client that reaches Envoy ` +
        'without passing through the trusted proxies chooses that address',
    );
}

/** What a virtual host needs from each listener carrying it, with where it says so. */
interface Need {
  path: PathSegment[];
  clientAddress?: true;
  jwtProviders?: readonly string[];
  rateLimitService?: true;
  clientCertificates?: true;
}

const NEEDS = new WeakMap<VirtualHostDoc, Need[]>();

function needsOf(v: VirtualHostDoc): Need[] {
  let needs = NEEDS.get(v);
  if (needs) return needs;
  needs = [];
  const add = (o: Pick<RouteDoc, 'access' | 'jwt' | 'rateLimit' | 'globalRateLimit'>, path: PathSegment[]) => {
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
export function checkCarriedProtection(l: ListenerDoc, v: VirtualHostDoc, vref: DocRef, sink: DiagnosticSink): void {
  for (const n of needsOf(v)) {
    if (n.clientAddress) warnForwardedAddress(l, n.path, 'what this virtual host keys by client address', vref, sink);
    if (n.jwtProviders) {
      const known = new Set(l.jwt?.providers.map((p) => p.name));
      n.jwtProviders.forEach((p, i) => {
        if (!known.has(p))
          sink.error(
            Codes.UNKNOWN_REFERENCE,
            vref,
            [...n.path, 'require', i],
            `listener "${l.name}" carries this virtual host and has no JWT provider "${p}" ` +
              '(define it in its jwt.providers)',
          );
      });
    }
    if (n.rateLimitService && !l.rateLimitService)
      sink.error(
        Codes.INVALID_VALUE,
        vref,
        n.path,
        `listener "${l.name}" carries this virtual host and has no rateLimitService to send descriptors to`,
      );
    if (n.clientCertificates && !l.tls?.clientCa)
      sink.error(
        Codes.INVALID_VALUE,
        vref,
        n.path,
        `listener "${l.name}" carries this virtual host and asks for no client certificate (tls.clientCa)`,
      );
  }
}

/** Upstream identity: the names checked need a CA to check them with; TLS without them is warned. */
export function checkUpstreamNames(s: ServiceDoc, r: DocRef, sink: DiagnosticSink): void {
  if (!s.tls) return;
  s.tls.subjectAltNames?.forEach((m, i) => checkNameMatch(m, ['tls', 'subjectAltNames', i], r, sink));
  if (s.tls.subjectAltNames && !s.tls.caFile && !s.tls.caSecret)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['tls', 'subjectAltNames'],
      'names are checked on a certificate the CA verified: set caFile or caSecret',
    );
  else if (!s.tls.caFile && !s.tls.caSecret)
    sink.warn(
      Codes.INVALID_VALUE,
      r,
      ['tls'],
      "the upstream's certificate is not verified: set caFile or caSecret, and subjectAltNames",
    );
  else if (!s.tls.subjectAltNames)
    sink.warn(
      Codes.INVALID_VALUE,
      r,
      ['tls'],
      'no subjectAltNames: any certificate the CA ever signed is accepted as this service',
    );
}
