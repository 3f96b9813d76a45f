/**
 * Locality in Envoy's terms. Weights are the `load_balancing_weight` of each LocalityLbEndpoints
 * with the Cluster's `locality_weighted_lb_config`. Failover by distance is a ClusterLoadAssignment
 * per calling locality: the same endpoints, with priorities by distance from the caller. Callers
 * that share the longest locality prefix any endpoint has share one assignment, so the variants a
 * service has are bounded by its endpoints' localities, never by the number of callers.
 */
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import { localitySelects, type LocalityService, type LocalityWeightDoc } from './schema.ts';

/** A locality as Envoy's `Locality` has it (every field present, empty when not given). */
export interface Locality {
  readonly region: string;
  readonly zone: string;
  readonly subZone: string;
}

const LEVELS = 3;

function levelsOf(l: Locality): readonly [string, string, string] {
  return [l.region, l.zone, l.subZone];
}

/** The key of a locality prefix (region; region and zone; all three), unambiguous whatever the names hold. */
function prefixKey(levels: readonly string[]): string {
  return JSON.stringify(levels);
}

/** How many levels a locality names: up to its last non-empty one. */
function depthOf(levels: readonly string[]): number {
  let n = levels.length;
  while (n > 0 && !levels[n - 1]) n--;
  return n;
}

/** The keys of the first `depth` levels and of each shorter prefix, longest first. */
function prefixKeys(levels: readonly string[], depth: number): string[] {
  const keys: string[] = [];
  for (let n = depth; n >= 1; n--) keys.push(prefixKey(levels.slice(0, n)));
  return keys;
}

/** A caller's keys, most specific first: the variant it gets is the first one that exists. */
export function callerKeys(l: Locality): string[] {
  const levels = levelsOf(l);
  return prefixKeys(levels, depthOf(levels));
}

/** A caller key and the keys of its shorter prefixes, longest first (what a caller there looks up). */
export function keyAndPrefixes(key: string): string[] {
  const levels = JSON.parse(key) as string[];
  return prefixKeys(levels, levels.length);
}

/**
 * The Cluster fields: weights only count when the Cluster says so; zone-aware routing is the
 * Cluster's too (it then takes the caller's zone from the local cluster its bootstrap names).
 */
export function localityCluster(s: LocalityService): JsonObject | undefined {
  const l = s.locality;
  if (l?.weights) return { common_lb_config: { locality_weighted_lb_config: {} } };
  if (l?.zoneAware)
    return {
      common_lb_config: {
        zone_aware_lb_config: compact({
          routing_enabled: l.zoneAware.routingEnabled === undefined ? undefined : { value: l.zoneAware.routingEnabled },
          min_cluster_size: l.zoneAware.minClusterSize?.toString(),
        }),
      },
    };
  return undefined;
}

interface LocalityEndpoints extends JsonObject {
  locality?: { region?: string; zone?: string; sub_zone?: string };
  priority?: number;
}

function localityOf(e: LocalityEndpoints): Locality {
  return { region: e.locality?.region ?? '', zone: e.locality?.zone ?? '', subZone: e.locality?.sub_zone ?? '' };
}

function weightOf(weights: readonly LocalityWeightDoc[], l: Locality): number {
  return weights.find((w) => localitySelects(w, l))?.weight ?? 1;
}

/** A service's assignment with the operator's locality weights in place of the endpoint counts. */
export function weighLocalities(s: LocalityService, cla: JsonObject): JsonObject {
  const weights = s.locality?.weights;
  const endpoints = cla.endpoints as LocalityEndpoints[] | undefined;
  if (!weights || !endpoints) return cla;
  return {
    ...cla,
    endpoints: endpoints.map((e) => ({ ...e, load_balancing_weight: weightOf(weights, localityOf(e)) })),
  };
}

/** How many leading levels of a caller's prefix an endpoint's locality agrees with. */
function sharedLevels(caller: readonly string[], endpoint: readonly string[]): number {
  let n = 0;
  while (n < caller.length && caller[n] === endpoint[n]) n++;
  return n;
}

/**
 * By caller key: the assignment a caller there is served, its endpoints' priorities their distance
 * from it (fewer shared levels, farther), numbered from 0 without gaps. A key whose assignment would
 * be one priority (every endpoint as far as every other) is left out: the base serves it.
 */
export function failoverVariants(cla: JsonObject): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  const endpoints = (cla.endpoints as LocalityEndpoints[] | undefined) ?? [];
  const localities = endpoints.map((e) => levelsOf(localityOf(e)));
  const prefixes = new Map<string, readonly string[]>();
  for (const l of localities)
    for (let n = 1; n <= depthOf(l); n++) prefixes.set(prefixKey(l.slice(0, n)), l.slice(0, n));
  for (const [key, caller] of prefixes) {
    // A caller known only to this prefix differs from every endpoint at the next level.
    const distance = localities.map((l) => LEVELS - sharedLevels(caller, l));
    const levels = [...new Set(distance)].sort((a, b) => a - b);
    if (levels.length < 2) continue;
    const ordered = endpoints
      .map((e, i) => ({ e, priority: levels.indexOf(distance[i]!) }))
      .sort((a, b) => a.priority - b.priority);
    out.set(key, {
      ...cla,
      endpoints: ordered.map(({ e, priority }) => {
        const { priority: _dropped, ...rest } = e;
        return priority ? { ...rest, priority } : rest;
      }),
    });
  }
  return out;
}
