/** Checks of routes: HTTP and gRPC matches, targets, retries, and routes another one hides. */
import { parseDurationMs } from '../shared/duration.ts';
import { checkRegex } from './regex-check.ts';
import { GRPC_FEATURES, supportedFrom } from './grpc-compat.ts';
import { checkGrpcHashPolicy, checkTrafficRoute } from './traffic-checks.ts';
import { checkRouteFeatures, featureCheck } from './feature-checks.ts';
import { Codes } from '../shared/diagnostics.ts';
import { badOperators } from '../features/kit/format-operators.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import type {
  GrpcRouteDoc,
  HeaderMatchDoc,
  HeadersDoc,
  QueryMatchDoc,
  RetriesDoc,
  RouteDoc,
  ServiceDoc,
} from './schema.ts';
import { appendAll } from '../shared/arrays.ts';

/** Envoy's router retry conditions (x-envoy-retry-on and x-envoy-retry-grpc-on). */
const ENVOY_RETRY_ON = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);
/** The gRPC status conditions proxyless clients implement (gRFC A44). */
const GRPC_RETRY_ON = new Set(['cancelled', 'deadline-exceeded', 'internal', 'resource-exhausted', 'unavailable']);

export function checkStringMatch(
  m: HeaderMatchDoc | QueryMatchDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
): void {
  const set = (['exact', 'prefix', 'regex', 'present'] as const).filter(
    (k) => (m as Record<string, unknown>)[k] !== undefined,
  );
  if (set.length > 1)
    sink.error(Codes.INVALID_VALUE, r, path, `use only one of exact, prefix, regex, present (got ${set.join(', ')})`);
  if (m.regex !== undefined) checkRegex(m.regex, [...path, 'regex'], r, sink);
}

export function checkTargets(
  route: { to?: string; split?: { service: string; weight: number }[] },
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): ServiceDoc[] {
  const out: ServiceDoc[] = [];
  if (route.to !== undefined) {
    const s = needService(r, [...path, 'to'], route.to);
    if (s) out.push(s);
  }
  if (route.split) {
    const seen = new Set<string>();
    route.split.forEach((t, j) => {
      if (seen.has(t.service))
        sink.error(
          Codes.CONFLICT,
          r,
          [...path, 'split', j, 'service'],
          `service "${t.service}" appears twice in this split`,
        );
      seen.add(t.service);
      const s = needService(r, [...path, 'split', j, 'service'], t.service);
      if (s) out.push(s);
    });
    if (route.split.reduce((a, t) => a + t.weight, 0) === 0)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'split'], 'the weights of a split must not all be 0');
  }
  return out;
}

function checkRetries(
  retries: RetriesDoc | undefined,
  allowed: Set<string>,
  what: string,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
): void {
  retries?.on.forEach((c, i) => {
    if (!allowed.has(c))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'retries', 'on', i],
        `"${c}" is not a ${what} retry condition (one of ${[...allowed].join(', ')})`,
      );
  });
  const b = retries?.backoff;
  if (b?.max !== undefined && (parseDurationMs(b.max) ?? 0) < (parseDurationMs(b.base) ?? 0))
    sink.error(Codes.INVALID_VALUE, r, [...path, 'retries', 'backoff', 'max'], 'max is below base');
  if (b && (parseDurationMs(b.base) ?? 0) <= 0)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'retries', 'backoff', 'base'], 'base must be above 0');
  retries?.retriableHeaders?.forEach((h, i) =>
    checkStringMatch(h, [...path, 'retries', 'retriableHeaders', i], r, sink),
  );
  if (what === 'gRPC')
    for (const k of ['statusCodes', 'retryOtherHosts', 'hostSelectionAttempts', 'retriableHeaders'] as const)
      if (retries?.[k] !== undefined)
        sink.error(
          Codes.CLIENT_COMPAT,
          r,
          [...path, 'retries', k],
          `\`${k}\` is HTTP's: gRPC clients retry on status names (on) with backoff only`,
        );
}

export function checkHttpRoute(
  route: RouteDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): void {
  const actions = (['to', 'split', 'redirect', 'directResponse'] as const).filter((k) => route[k] !== undefined);
  if (actions.length !== 1) {
    sink.error(
      Codes.INVALID_VALUE,
      r,
      path,
      actions.length
        ? `use only one of to, split, redirect, directResponse (got ${actions.join(', ')})`
        : 'a route needs one of to, split, redirect, directResponse',
    );
  }
  const forwards = route.to !== undefined || route.split !== undefined;
  checkHeaders(route.headers, [...path, 'headers'], r, sink);
  for (const k of ['timeout', 'retries', 'rewrite'] as const) {
    if (route[k] !== undefined && !forwards)
      sink.error(Codes.INVALID_VALUE, r, [...path, k], `\`${k}\` applies only to routes that forward (to or split)`);
  }
  const m = route.match;
  if (m) {
    const specs = (['prefix', 'path', 'regex'] as const).filter((k) => m[k] !== undefined);
    if (specs.length > 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'match'],
        `use only one of prefix, path, regex (got ${specs.join(', ')})`,
      );
    if (m.regex !== undefined) checkRegex(m.regex, [...path, 'match', 'regex'], r, sink);
    m.headers?.forEach((h, j) => {
      checkStringMatch(h, [...path, 'match', 'headers', j], r, sink);
    });
    m.query?.forEach((q, j) => {
      checkStringMatch(q, [...path, 'match', 'query', j], r, sink);
    });
    if (route.rewrite?.prefix !== undefined && m.regex !== undefined)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'rewrite', 'prefix'],
        'a prefix rewrite needs a prefix or path match',
      );
  }
  checkRetries(route.retries, ENVOY_RETRY_ON, 'Envoy', path, r, sink);
  const targets = checkTargets(route, path, r, sink, needService);
  checkTrafficRoute(route, path, r, sink, needService, targets);
  checkRouteFeatures(route, path, featureCheck(r, sink, needService));
  route.hashPolicy?.forEach((h, i) => {
    const set = (['header', 'cookie', 'sourceIp', 'query'] as const).filter((k) => h[k] !== undefined);
    if (set.length !== 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'hashPolicy', i],
        `a hash policy takes one of header, cookie, sourceIp, query${set.length ? ` (got ${set.join(', ')})` : ''}`,
      );
  });
  if (route.hashPolicy)
    for (const s of targets)
      if (s.lb !== 'ring_hash' && s.lb !== 'maglev')
        sink.warn(
          Codes.INVALID_VALUE,
          r,
          [...path, 'hashPolicy'],
          `service "${s.name}" balances ${s.lb ?? 'round_robin'}: the hash policy has no effect ` +
            '(use lb ring_hash or maglev)',
        );
}

export type RouteMatchDoc = NonNullable<RouteDoc['match']>;

/** What matters of a route's match for shadowing, computed once per route. */
interface MatchShape {
  conditions: Set<string>;
  sensitive: boolean;
  prefix?: string;
  path?: string;
  regex: boolean;
}

function matchShape(m: RouteMatchDoc): MatchShape {
  const conditions = new Set([
    ...(m.headers ?? []).map((h) => `h${JSON.stringify(h)}`),
    ...(m.query ?? []).map((q) => `q${JSON.stringify(q)}`),
  ]);
  const regex = m.regex !== undefined;
  return {
    conditions,
    sensitive: m.caseSensitive ?? true,
    regex,
    path: m.path,
    prefix: m.path === undefined && !regex ? (m.prefix ?? '/') : undefined,
  };
}

/**
 * A route is never used when an earlier route of its virtual host matches every request it matches.
 * An earlier route can only do that if its prefix is a prefix of this route's path or prefix (or
 * "/"), so earlier routes are indexed by prefix and path: each route probes its own prefixes,
 * O(path length), instead of comparing with every earlier route (quadratic in a large virtual host).
 */
export function checkShadowedRoutes(routes: RouteDoc[], r: DocRef, sink: DiagnosticSink): void {
  const shapes = routes.map((route) => matchShape(route.match ?? {}));
  const index = { prefix: new Map<string, number[]>(), path: new Map<string, number[]>() };
  const add = (map: Map<string, number[]>, key: string, i: number) =>
    (map.get(key) ?? map.set(key, []).get(key)!).push(i);
  const keyOf = (x: string, sensitive: boolean) => (sensitive ? `s${x}` : `i${x.toLowerCase()}`);
  shapes.forEach((b, i) => {
    const candidates: number[] = [
      ...(index.prefix.get('s/') ?? []),
      ...(index.prefix.get('i/') ?? []),
      ...(index.prefix.get('s') ?? []),
    ];
    const value = b.path ?? b.prefix;
    if (value !== undefined) {
      for (let len = 1; len <= value.length; len++) {
        const p = value.slice(0, len);
        // A case-sensitive earlier route covers only case-sensitive later ones (see matchCovers).
        if (b.sensitive) appendAll(candidates, index.prefix.get(keyOf(p, true)) ?? []);
        appendAll(candidates, index.prefix.get(keyOf(p, false)) ?? []);
      }
      if (b.path !== undefined) {
        if (b.sensitive) appendAll(candidates, index.path.get(keyOf(b.path, true)) ?? []);
        appendAll(candidates, index.path.get(keyOf(b.path, false)) ?? []);
      }
    }
    const j = candidates.filter((k) => matchCovers(shapes[k]!, b)).sort((x, y) => x - y)[0];
    if (j !== undefined) {
      const name = (k: number) => (routes[k]!.name ? ` ("${routes[k]!.name}")` : '');
      sink.warn(
        Codes.SHADOWED_ROUTE,
        r,
        ['routes', i, 'match'],
        `this route${name(i)} is never used: routes[${j}]${name(j)} comes first and matches every request it ` +
          `matches; put the more specific route first`,
      );
    }
    if (b.prefix !== undefined) add(index.prefix, b.prefix === '' ? 's' : keyOf(b.prefix, b.sensitive), i);
    if (b.path !== undefined) add(index.path, keyOf(b.path, b.sensitive), i);
  });
}

/** Whether every request matching `b` also matches `a` (conservative: false when unsure, e.g. regexes). */
function matchCovers(a: MatchShape, b: MatchShape): boolean {
  if (a.regex || a.conditions.size > b.conditions.size) return false;
  for (const c of a.conditions) if (!b.conditions.has(c)) return false;
  if (a.prefix === '/' || a.prefix === '') return true; // every path starts with "/"
  // A case-sensitive `a` does not cover a case-insensitive `b` (b matches other spellings).
  if (a.sensitive && !b.sensitive) return false;
  const fold = (x: string) => (a.sensitive ? x : x.toLowerCase());
  const bValue = b.path ?? b.prefix;
  if (bValue === undefined) return false;
  if (a.prefix !== undefined) return fold(bValue).startsWith(fold(a.prefix));
  return b.path !== undefined && fold(b.path) === fold(a.path!);
}

export function checkGrpcRoute(
  route: GrpcRouteDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): void {
  if ((route.to === undefined) === (route.split === undefined))
    sink.error(Codes.INVALID_VALUE, r, path, 'a gRPC route needs exactly one of to, split');
  checkGrpcHashPolicy(route, path, r, sink);
  const m = route.match;
  if (m) {
    if (m.method !== undefined && m.service === undefined)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'match', 'method'], '`method` needs `service`');
    const specs = [
      m.service !== undefined ? 'service' : undefined,
      m.prefix !== undefined ? 'prefix' : undefined,
      m.path !== undefined ? 'path' : undefined,
    ].filter(Boolean);
    if (specs.length > 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'match'],
        `use only one of service/method, prefix, path (got ${specs.join(', ')})`,
      );
    m.headers?.forEach((h, j) => {
      checkStringMatch(h, [...path, 'match', 'headers', j], r, sink);
    });
  }
  checkRetries(route.retries, GRPC_RETRY_ON, 'gRPC', path, r, sink);
  if (route.fault && !route.fault.delay && !route.fault.abort)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'fault'], 'a fault injects a delay, an abort or both: give one');
  const targets = checkTargets(route, path, r, sink, needService);
  for (const s of targets) {
    // gRFC A37: gRPC resolves a LOGICAL_DNS cluster's one host name itself; STRICT_DNS is not supported.
    if (s.dns && s.dns.mode !== 'logical')
      sink.error(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" uses strict DNS, which proxyless gRPC clients do not resolve: give it ` +
          '`dns.mode: logical` (gRFC A37: the client resolves the name itself) or static endpoints',
      );
    if (s.lb === 'random' || s.lb === 'maglev')
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" uses lb ${s.lb}, which no gRPC client implements: they refuse (NACK) the cluster`,
      );
    else if (s.lb === 'least_request')
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" uses lb least_request, which gRPC clients implement only from ` +
          `${supportedFrom(GRPC_FEATURES.leastRequest).join(', ')}: others refuse (NACK) the cluster`,
      );
    const o = s.outlierDetection;
    const ignored = (['consecutive5xx', 'consecutiveGatewayFailure'] as const).filter((k) => o?.[k] !== undefined);
    if (ignored.length)
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" ejects on ${ignored.join(' and ')}, which gRPC clients ignore (gRFC A50): use ` +
          'outlierDetection.successRate or failurePercentage for them',
      );
  }
}

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Header edits Envoy would refuse: names that are no header name, pseudo-headers, and (on requests)
 * `host`, which Envoy does not let a route change; values with line breaks or broken operators.
 */
export function checkHeaders(h: HeadersDoc | undefined, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  for (const side of ['request', 'response'] as const) {
    const e = h?.[side];
    if (!e) continue;
    const name = (n: string, at: PathSegment[]) => {
      if (n.startsWith(':') || (side === 'request' && n.toLowerCase() === 'host'))
        sink.error(
          Codes.INVALID_VALUE,
          r,
          at,
          `"${n}" cannot be changed by a route (Envoy refuses pseudo-headers and host)`,
        );
      else if (!HEADER_NAME.test(n)) sink.error(Codes.INVALID_VALUE, r, at, `"${n}" is not a header name`);
    };
    for (const op of ['set', 'add'] as const)
      for (const [n, v] of Object.entries(e[op] ?? {})) {
        const at: PathSegment[] = [...path, side, op, n];
        name(n, at);
        if (/[\r\n\0]/.test(v))
          sink.error(Codes.INVALID_VALUE, r, at, 'a header value cannot hold a line break or NUL');
        for (const bad of badOperators(v))
          sink.error(Codes.INVALID_VALUE, r, at, `"${bad}" is not an Envoy format operator (write %% for a literal %)`);
      }
    e.remove?.forEach((n, i) => name(n, [...path, side, 'remove', i]));
  }
}
