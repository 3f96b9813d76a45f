import { byName } from '../model/types.ts';
import { shortHash } from '../shared/hash.ts';
import { RESOURCE_KINDS, type ResourceKind } from '../xds/resource-types.ts';
import { derive, type Derivable } from './derived.ts';
import type { EncodedResource } from './encoder.ts';

export interface TypeSnapshot extends Derivable {
  readonly kind: ResourceKind;
  /** Hash of the sorted (name, version) pairs: changes iff any resource of the type changes. */
  readonly version: string;
  readonly resources: ReadonlyMap<string, EncodedResource>;
  /** What a wildcard subscriber gets (Listener and Cluster): every resource not `namedOnly`. */
  readonly wildcard: readonly EncodedResource[];
}

/** Everything one node group is served, per type. Immutable once built. */
export interface GroupSnapshot {
  readonly group: string;
  readonly types: Readonly<Record<ResourceKind, TypeSnapshot>>;
}

export function makeTypeSnapshot(kind: ResourceKind, resources: readonly EncodedResource[]): TypeSnapshot {
  const sorted = [...resources].sort(byName);
  const version = shortHash(`${kind}\n${sorted.map((r) => `${r.name}\u0000${r.version}`).join('\n')}`);
  return storedTypeSnapshot(kind, version, sorted);
}

/**
 * A type whose version is known and whose resources are in name order: what makeTypeSnapshot
 * computes, and what a restart reads back from the store (nothing sorted or hashed again).
 */
export function storedTypeSnapshot(
  kind: ResourceKind,
  version: string,
  sorted: readonly EncodedResource[],
): TypeSnapshot {
  return {
    kind,
    version,
    resources: new Map(sorted.map((r) => [r.name, r])),
    wildcard: sorted.filter((r) => !r.namedOnly),
  };
}

/** Resources bucketed by kind (for resources that come as one list: a stored version, tests). */
function byKind(resources: readonly EncodedResource[]): Record<ResourceKind, EncodedResource[]> {
  const out = Object.fromEntries(RESOURCE_KINDS.map((k) => [k, [] as EncodedResource[]])) as Record<
    ResourceKind,
    EncodedResource[]
  >;
  for (const r of resources) out[r.kind].push(r);
  return out;
}

/** The list each type snapshot was made from: the same list again needs no comparison. */
const SOURCE = new WeakMap<TypeSnapshot, readonly EncodedResource[]>();

/**
 * `previous`: the group's last snapshot. A type whose list is the very list it was made from, or
 * whose resources are the very same encoded objects, keeps its TypeSnapshot (no re-sort, no
 * re-hash; response bodies cached on it stay valid).
 */
export function makeGroupSnapshot(
  group: string,
  resources: Readonly<Record<ResourceKind, readonly EncodedResource[]>> | readonly EncodedResource[],
  previous?: GroupSnapshot,
): GroupSnapshot {
  const lists = Array.isArray(resources) ? byKind(resources as readonly EncodedResource[]) : resources;
  const types = Object.fromEntries(
    RESOURCE_KINDS.map((k) => {
      const list = (lists as Record<ResourceKind, readonly EncodedResource[]>)[k];
      const prev = previous?.types[k];
      if (prev && (SOURCE.get(prev) === list || sameResources(prev, list))) return [k, prev];
      const made = makeTypeSnapshot(k, list);
      SOURCE.set(made, list);
      return [k, made];
    }),
  ) as Record<ResourceKind, TypeSnapshot>;
  return { group, types };
}

function sameResources(prev: TypeSnapshot, items: readonly EncodedResource[]): boolean {
  if (prev.resources.size !== items.length) return false;
  for (const r of items) if (prev.resources.get(r.name) !== r) return false;
  return true;
}

/** How one type snapshot differs from an earlier one, by name. */
export interface TypeDiff {
  /** In both, with another version. */
  readonly changed: readonly string[];
  /** Only in the newer one. */
  readonly added: readonly string[];
  /** Only in the earlier one (the earlier resource). */
  readonly removed: readonly EncodedResource[];
}

const NO_DIFF: TypeDiff = { changed: [], added: [], removed: [] };

/**
 * What changed from `from` to `to`, computed once per pair and shared by every stream that moves
 * between them: a stream's push then costs what changed, not the size of the type.
 */
export function diffTypes(from: TypeSnapshot, to: TypeSnapshot): TypeDiff {
  if (from === to || from.version === to.version) return NO_DIFF;
  return derive(
    to,
    'diff-from',
    from.version,
    () => {
      const changed: string[] = [];
      const added: string[] = [];
      const removed: EncodedResource[] = [];
      for (const [name, r] of to.resources) {
        const before = from.resources.get(name);
        if (!before) added.push(name);
        else if (before.version !== r.version) changed.push(name);
      }
      for (const [name, r] of from.resources) if (!to.resources.has(name)) removed.push(r);
      return { changed, added, removed };
    },
    16,
  );
}
