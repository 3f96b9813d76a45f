/** CORS rules a schema cannot express: one match per origin, regexes Envoy accepts, no "*" with credentials. */
import { Codes, type PathSegment } from '../../shared/diagnostics.ts';
import type { FeatureCheck } from '../kit/feature.ts';
import type { CorsDoc } from './schema.ts';

export function checkCors(c: CorsDoc | false | undefined, path: readonly PathSegment[], check: FeatureCheck): void {
  if (!c) return;
  c.origins.forEach((o, i) => {
    const set = (['exact', 'prefix', 'regex'] as const).filter((k) => o[k] !== undefined);
    if (set.length !== 1)
      check.error(Codes.INVALID_VALUE, [...path, 'origins', i], 'an origin is one of exact, prefix, regex');
    if (o.regex !== undefined) check.regex(o.regex, [...path, 'origins', i, 'regex']);
    if (c.credentials && o.exact === '*')
      check.error(
        Codes.INVALID_VALUE,
        [...path, 'origins', i],
        'browsers refuse credentials with the origin "*": list the origins',
      );
  });
}
