/**
 * Deadlines in the YAML model: a route, a fault or a Runtime document that lapses by itself, at a
 * time (`until`) or after a while (`for`, counted from the first version that served it). The
 * fields and the rules that need no clock; what is due is decided in src/model/expiry.ts.
 */
import { Type } from '@sinclair/typebox';
import { Codes, type PathSegment } from '../../shared/diagnostics.ts';
import { DURATION_PATTERN, parseDurationMs } from '../../shared/duration.ts';
import type { FeatureCheck } from './feature.ts';

/** RFC 3339 with a zone (Z or an offset): a deadline means one instant on every host. */
export const TIME_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})$';

/** The longest window `for` takes: a deadline further out is a permanent change, made as one. */
export const MAX_WINDOW = '8760h';

export const expiryFields = {
  until: Type.Optional(
    Type.String({
      pattern: TIME_PATTERN,
      description:
        'Removed at this time (RFC 3339 with Z or an offset, e.g. 2026-12-01T18:00:00Z): fleetxds serves a ' +
        'new version without it.',
    }),
  ),
  for: Type.Optional(
    Type.String({
      pattern: DURATION_PATTERN,
      description:
        'Removed this long (e.g. 30m, 2h) after the first version that served it; editing it starts a new window.',
    }),
  ),
} as const;

/** A part of a document with a deadline. */
export interface Expiring {
  readonly until?: string;
  readonly for?: string;
}

export function hasDeadline(o: object | false | undefined): o is Expiring {
  return !!o && ((o as Expiring).until !== undefined || (o as Expiring).for !== undefined);
}

/** Runtime keys fleetxds sets itself (a fault window's shares); Runtime documents may not use them. */
export const RESERVED_RUNTIME_PREFIX = 'fleetxds.';

const MAX_WINDOW_MS = parseDurationMs(MAX_WINDOW)!;

/** The rules of one deadline, wherever it is (a route, a fault, a Runtime document). */
export function checkDeadline(o: Expiring, path: readonly PathSegment[], c: Pick<FeatureCheck, 'error'>): void {
  if (o.until !== undefined && o.for !== undefined) {
    c.error(Codes.CONFLICT, [...path, 'for'], 'give one deadline: until (a time) or for (a duration)');
    return;
  }
  if (o.until !== undefined && Number.isNaN(Date.parse(o.until)))
    c.error(Codes.INVALID_VALUE, [...path, 'until'], `"${o.until}" is not a time (e.g. 2026-12-01T18:00:00Z)`);
  if (o.for !== undefined) {
    const ms = parseDurationMs(o.for) ?? 0;
    if (ms < 1000) c.error(Codes.INVALID_VALUE, [...path, 'for'], 'a window lasts at least 1s');
    else if (ms > MAX_WINDOW_MS)
      c.error(
        Codes.INVALID_VALUE,
        [...path, 'for'],
        `a window lasts at most ${MAX_WINDOW}: a longer change is a permanent one (drop for)`,
      );
  }
}
