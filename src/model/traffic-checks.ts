/**
 * Rules for mirroring, CORS, compression, tracing, rewrites and redirects that a schema cannot
 * express: one way to say each thing, regexes Envoy accepts, services that exist and speak the
 * protocol, and settings that only make sense together.
 */
import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import { checkRegex } from './regex-check.ts';
import type { GrpcRouteDoc, ListenerDoc, RouteDoc, ServiceDoc, VirtualHostDoc } from './schema.ts';
import type { CorsDoc } from './traffic-schema.ts';

function checkCors(c: CorsDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  c.origins.forEach((o, i) => {
    const set = (['exact', 'prefix', 'regex'] as const).filter((k) => o[k] !== undefined);
    if (set.length !== 1)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'origins', i], 'an origin is one of exact, prefix, regex');
    if (o.regex !== undefined) checkRegex(o.regex, [...path, 'origins', i, 'regex'], r, sink);
    if (c.credentials && o.exact === '*')
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'origins', i],
        'browsers refuse credentials with the origin "*": list the origins',
      );
  });
}

/** A route's mirrors, rewrites and redirect; its CORS policy. `targets`: the services it forwards to. */
export function checkTrafficRoute(
  route: RouteDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
  targets: readonly ServiceDoc[],
): void {
  route.mirror?.forEach((m, i) => {
    needService(r, [...path, 'mirror', i, 'to'], m.to);
    if (route.to === m.to)
      sink.warn(Codes.INVALID_VALUE, r, [...path, 'mirror', i, 'to'], `"${m.to}" gets the request already`);
  });
  if (route.mirror && route.to === undefined && route.split === undefined)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'mirror'], 'mirroring copies requests a route forwards (to or split)');
  if (route.cors) checkCors(route.cors, [...path, 'cors'], r, sink);
  const rw = route.rewrite;
  if (rw) {
    if (rw.prefix !== undefined && rw.regex)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'rewrite'], 'use one of prefix and regex');
    if (rw.host !== undefined && rw.hostFromService)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'rewrite'], 'use one of host and hostFromService');
    if (rw.regex) checkRegex(rw.regex.pattern, [...path, 'rewrite', 'regex', 'pattern'], r, sink);
    if (rw.hostFromService)
      for (const s of targets)
        if (!s.dns)
          sink.error(
            Codes.INVALID_VALUE,
            r,
            [...path, 'rewrite', 'hostFromService'],
            `service "${s.name}" has static endpoints, which have no DNS name to take the host from (use rewrite.host)`,
          );
  }
  const d = route.redirect;
  if (d) {
    const paths = (['path', 'prefix', 'regex'] as const).filter((k) => d[k] !== undefined);
    if (paths.length > 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'redirect'],
        `use one of path, prefix, regex (got ${paths.join(', ')})`,
      );
    if (d.regex) checkRegex(d.regex.pattern, [...path, 'redirect', 'regex', 'pattern'], r, sink);
    if (d.prefix !== undefined && route.match?.regex !== undefined)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'redirect', 'prefix'],
        'a prefix rewrite needs a prefix or path match',
      );
  }
}

export function checkTrafficVirtualHost(v: VirtualHostDoc, r: DocRef, sink: DiagnosticSink): void {
  if (v.cors) checkCors(v.cors, ['cors'], r, sink);
}

/** A listener's compression and tracing. */
export function checkTrafficListener(l: ListenerDoc, r: DocRef, sink: DiagnosticSink, needService: NeedService): void {
  if (!l.virtualHosts)
    for (const k of ['compression', 'tracing'] as const)
      if (l[k] !== undefined)
        sink.error(Codes.INVALID_VALUE, r, [k], `${k} is for HTTP listeners: this one proxies TCP`);
  const t = l.tracing;
  if (!t) return;
  if ((t.zipkin === undefined) === (t.openTelemetry === undefined))
    sink.error(Codes.INVALID_VALUE, r, ['tracing'], 'tracing needs one of zipkin and openTelemetry');
  if (t.zipkin) needService(r, ['tracing', 'zipkin', 'service'], t.zipkin.service);
  if (t.openTelemetry) {
    const s = needService(r, ['tracing', 'openTelemetry', 'service'], t.openTelemetry.service);
    if (s && s.protocol !== 'grpc' && s.protocol !== 'http2')
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['tracing', 'openTelemetry', 'service'],
        `OTLP is gRPC: service "${s.name}" needs protocol: grpc`,
      );
  }
  if (t.serviceName !== undefined && !t.openTelemetry)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['tracing', 'serviceName'],
      "Zipkin spans name the proxy's node cluster as the service; serviceName is for openTelemetry",
    );
  for (const [tag, from] of Object.entries(t.tags ?? {}))
    if ((from.header === undefined) === (from.literal === undefined))
      sink.error(Codes.INVALID_VALUE, r, ['tracing', 'tags', tag], 'a tag is one of header and literal');
}

/** gRPC routes' hash policies (gRFC A42): a header or the channel id each. */
export function checkGrpcHashPolicy(route: GrpcRouteDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  route.hashPolicy?.forEach((h, i) => {
    if ((h.header === undefined) === (h.channelId === undefined))
      sink.error(Codes.INVALID_VALUE, r, [...path, 'hashPolicy', i], 'a hash policy is one of header and channelId');
  });
}

/** A retry budget replaces maxRetries in Envoy: both set is a mistake. */
export function checkRetryBudget(s: ServiceDoc, r: DocRef, sink: DiagnosticSink): void {
  if (s.circuitBreaker?.retryBudget && s.circuitBreaker.maxRetries !== undefined)
    sink.warn(
      Codes.INVALID_VALUE,
      r,
      ['circuitBreaker', 'maxRetries'],
      'Envoy ignores maxRetries when retryBudget is set',
    );
}
