/** What the schema cannot say about a service's locality settings. */
import { Codes } from '../../shared/diagnostics.ts';
import type { FeatureCheck } from '../kit/feature.ts';
import { localitySelects, type LocalityService } from './schema.ts';

/** Envoy's minimum upstream size for zone-aware routing when the cluster does not say. */
export const ENVOY_MIN_CLUSTER_SIZE = 6;

/** Policies Envoy's zone-aware routing is not part of (hashing keeps its own ring; load weights their own). */
const ZONE_UNAWARE_LB = new Set(['ring_hash', 'maglev', 'weighted_by_load']);

export function checkLocality(s: LocalityService, c: FeatureCheck): void {
  const l = s.locality;
  if (!l) return;
  if (!l.failover && !l.weights && !l.zoneAware) {
    c.error(Codes.INVALID_VALUE, ['locality'], 'locality sets none of failover, weights, zoneAware');
    return;
  }
  if (l.zoneAware && (l.failover || l.weights)) {
    // Envoy's Cluster takes zone-aware or locality-weighted balancing, not both; and it routes by
    // zone within priority 0 only, which failover would leave holding the caller's zone alone.
    c.error(
      Codes.CONFLICT,
      ['locality', 'zoneAware'],
      "zoneAware is Envoy's own choice between zones: it cannot be combined with " +
        (l.failover ? 'failover' : 'weights'),
    );
    return;
  }
  if (l.zoneAware && ZONE_UNAWARE_LB.has(s.lb ?? '')) {
    c.error(
      Codes.CONFLICT,
      ['locality', 'zoneAware'],
      `Envoy routes by zone with lb round_robin, least_request or random, not ${s.lb}`,
    );
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
  if (l.zoneAware && placed.length === 0 && !s.registration)
    c.error(
      Codes.INVALID_VALUE,
      ['locality', 'zoneAware'],
      'no endpoint says where it is (region, zone or subZone): no caller would find one in its zone',
    );
  const min = l.zoneAware?.minClusterSize ?? ENVOY_MIN_CLUSTER_SIZE;
  if (l.zoneAware && !s.registration && (s.endpoints ?? []).length < min)
    c.warn(
      Codes.INVALID_VALUE,
      ['locality', 'zoneAware', ...(l.zoneAware.minClusterSize === undefined ? [] : ['minClusterSize'])],
      `the service has ${(s.endpoints ?? []).length} endpoints, fewer than the minimum cluster size ${min}: ` +
        'Envoy never routes it by zone (set minClusterSize)',
    );
  l.weights?.forEach((w, i) => {
    if (w.region === undefined && w.zone === undefined && w.subZone === undefined)
      c.error(Codes.INVALID_VALUE, ['locality', 'weights', i], 'a weight names no region, zone or subZone');
    else if (!s.registration && !placed.some((e) => localitySelects(w, e)))
      c.warn(
        Codes.INVALID_VALUE,
        ['locality', 'weights', i],
        'no endpoint is in this locality: the weight is never used',
      );
  });
}
