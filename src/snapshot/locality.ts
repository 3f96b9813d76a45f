/**
 * Failover by distance (src/features/locality) as served: a node group whose services fail over
 * by locality has, besides its snapshot, one variant per calling locality its endpoints make
 * distinct, differing only in those services' ClusterLoadAssignments. Variants are computed once per
 * assignment (shared by every group and version that serves it) and once per group snapshot; a node
 * is served the variant of the longest prefix of its locality that one exists for, or the group's
 * own snapshot.
 */
import { callerKeys, failoverVariants, keyAndPrefixes, type Locality } from '../features/locality/translate.ts';
import { RESOURCE_KINDS } from '../xds/resource-types.ts';
import type { EncodedResource, ResourceEncoder } from './encoder.ts';
import { replacedIn, type FailoverAssignments, type GroupSnapshot, type TypeSnapshot } from './group-snapshot.ts';

const VARIANTS = new WeakMap<EncodedResource, ReadonlyMap<string, EncodedResource>>();
const NONE: ReadonlyMap<string, EncodedResource> = new Map();

/** The assignments of one service's callers, by caller key (none for a service without localities). */
export function assignmentVariants(
  base: EncodedResource,
  encoder: ResourceEncoder,
): ReadonlyMap<string, EncodedResource> {
  let out = VARIANTS.get(base);
  if (!out) {
    const made = new Map<string, EncodedResource>();
    for (const [key, json] of failoverVariants(base.json)) made.set(key, encoder.encode('endpoint', base.name, json));
    out = made.size ? made : NONE;
    VARIANTS.set(base, out);
  }
  return out;
}

/**
 * The failover assignments of the named services an endpoint type serves: each one listed, with no
 * variants while its endpoints are in one locality (registered ones may come later, elsewhere).
 */
export function failoverAssignments(
  endpoints: TypeSnapshot,
  services: Iterable<string>,
  encoder: ResourceEncoder,
): FailoverAssignments | undefined {
  const out = new Map<string, ReadonlyMap<string, EncodedResource>>();
  for (const name of services) {
    const base = endpoints.resources.get(name);
    if (base) out.set(name, assignmentVariants(base, encoder));
  }
  return out.size ? out : undefined;
}

/** The value of the first of `keys` (most specific first) that `map` has. */
function firstOf<T>(map: ReadonlyMap<string, T>, keys: readonly string[]): T | undefined {
  for (const k of keys) {
    const hit = map.get(k);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * The group as callers in each locality are served it: `snapshot` with the failover services'
 * assignments for that locality. A variant whose endpoint type is what `prev` had keeps prev's
 * object (and the response bodies cached on it).
 */
export function localityVariants(
  snapshot: GroupSnapshot,
  failover: FailoverAssignments | undefined,
  prev: GroupSnapshot | undefined,
): ReadonlyMap<string, GroupSnapshot> | undefined {
  if (!failover?.size) return undefined;
  const keys = new Set<string>();
  for (const variants of failover.values()) for (const k of variants.keys()) keys.add(k);
  const base = snapshot.types.endpoint;
  const out = new Map<string, GroupSnapshot>();
  for (const key of keys) {
    // Each service's view for this key: its own for the longest prefix of the key it has.
    const lookups = keyAndPrefixes(key);
    const chosen = new Map<string, EncodedResource>();
    for (const [name, variants] of failover) {
      const r = firstOf(variants, lookups);
      if (r && base.resources.has(name)) chosen.set(name, r);
    }
    const before = prev?.localities?.get(key);
    const made = before ? sinceBefore(before.types.endpoint, base, chosen) : replacedIn(base, chosen);
    const endpoint = before?.types.endpoint.version === made.version ? before.types.endpoint : made;
    const types = { ...snapshot.types, endpoint };
    const same = before && RESOURCE_KINDS.every((k) => before.types[k] === types[k]);
    out.set(key, same ? before : { group: snapshot.group, types });
  }
  return out;
}

/**
 * A locality's endpoint type made from its previous one (not from the group's), at the names whose
 * resource differs: the streams in that locality then find the change recorded against what they
 * hold, and look at those names only, not at every assignment of the group.
 */
function sinceBefore(
  before: TypeSnapshot,
  base: TypeSnapshot,
  chosen: ReadonlyMap<string, EncodedResource>,
): TypeSnapshot {
  const delta = new Map<string, EncodedResource | undefined>();
  for (const r of base.resources.values()) {
    const want = chosen.get(r.name) ?? r;
    if (before.resources.get(r.name) !== want) delta.set(r.name, want);
  }
  for (const r of before.resources.values()) if (!base.resources.has(r.name)) delta.set(r.name, undefined);
  return delta.size ? replacedIn(before, delta) : before;
}

/** The snapshot a node in `locality` is served: its locality's variant, or the group's own. */
export function localizedFor(snapshot: GroupSnapshot, locality: Locality | undefined): GroupSnapshot {
  if (!snapshot.localities || !locality) return snapshot;
  return firstOf(snapshot.localities, callerKeys(locality)) ?? snapshot;
}
