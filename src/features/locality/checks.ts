/** What the schema cannot say about a service's locality settings. */
import { Codes } from '../../shared/diagnostics.ts';
import type { FeatureCheck } from '../kit/feature.ts';
import type { LocalityService } from './schema.ts';

export function checkLocality(s: LocalityService, c: FeatureCheck): void {
  const l = s.locality;
  if (!l) return;
  if (!l.failover && !l.weights) {
    c.error(Codes.INVALID_VALUE, ['locality'], 'locality sets neither failover nor weights');
    return;
  }
  if (s.dns) {
    c.error(
      Codes.CONFLICT,
      ['locality'],
      'a service resolved by DNS is one locality: locality needs endpoints (static or registered) that ' +
        'say where they are',
    );
    return;
  }
  // Priorities are what failover computes, and weights apply within one priority: the operator's own would fight them.
  (s.endpoints ?? []).forEach((e, i) => {
    if (e.priority !== undefined)
      c.error(
        Codes.CONFLICT,
        ['endpoints', i, 'priority'],
        'with locality set, priorities come from where the caller is: remove the endpoint priority',
      );
  });
  const placed = (s.endpoints ?? []).filter((e) => e.region ?? e.zone ?? e.subZone);
  if (l.failover && placed.length === 0 && !s.registration)
    c.error(
      Codes.INVALID_VALUE,
      ['locality', 'failover'],
      'no endpoint says where it is (region, zone or subZone): every caller would find them all equally far',
    );
  l.weights?.forEach((w, i) => {
    if (w.region === undefined && w.zone === undefined && w.subZone === undefined)
      c.error(Codes.INVALID_VALUE, ['locality', 'weights', i], 'a weight names no region, zone or subZone');
    else if (
      !s.registration &&
      !placed.some(
        (e) =>
          (w.region === undefined || w.region === e.region) &&
          (w.zone === undefined || w.zone === e.zone) &&
          (w.subZone === undefined || w.subZone === e.subZone),
      )
    )
      c.warn(
        Codes.INVALID_VALUE,
        ['locality', 'weights', i],
        'no endpoint is in this locality: the weight is never used',
      );
  });
}
