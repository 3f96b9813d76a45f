/**
 * Rules for rewrites, redirects and gRPC hash policies that a schema cannot express: one way to
 * say each thing, regexes Envoy accepts, services that exist, and settings that only make sense
 * together.
 */
import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import { checkRegex } from './regex-check.ts';
import type { GrpcRouteDoc, RouteDoc, ServiceDoc } from './schema.ts';

/** A route's rewrites and redirect. `targets`: the services it forwards to. */
export function checkTrafficRoute(
  route: RouteDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
  targets: readonly ServiceDoc[],
): void {
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

/** gRPC routes' hash policies (gRFC A42): a header or the channel id each. */
export function checkGrpcHashPolicy(route: GrpcRouteDoc, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  route.hashPolicy?.forEach((h, i) => {
    if ((h.header === undefined) === (h.channelId === undefined))
      sink.error(Codes.INVALID_VALUE, r, [...path, 'hashPolicy', i], 'a hash policy is one of header and channelId');
  });
}
