import { byName } from '../model/types.ts';
import { shortHash } from '../shared/hash.ts';
import { RESOURCE_KINDS, type ResourceKind } from '../xds/resource-types.ts';
import { derive, type Derivable } from './derived.ts';
import type { EncodedResource } from './encoder.ts';
import { findByName, patchByName, patchedFrom } from '../shared/sorted-lists.ts';
import { chunksOf, patchChunks, type KeyChunk } from './key-chunks.ts';

export interface TypeSnapshot extends Derivable {
  readonly kind: ResourceKind;
  /** Digest of the (name, version) pairs (see `digestOf`): changes iff any resource of the type changes. */
  readonly version: string;
  /** In name order. */
  readonly resources: ReadonlyMap<string, EncodedResource>;
  /** What a wildcard subscriber gets (Listener and Cluster): every resource not `namedOnly`, in name order. */
  readonly wildcard: readonly EncodedResource[];
}

/** By service, by caller locality key: the ClusterLoadAssignment a caller there gets (src/snapshot/locality.ts). */
export type FailoverAssignments = ReadonlyMap<string, ReadonlyMap<string, EncodedResource>>;

/** Everything one node group is served, per type. Immutable once built. */
export interface GroupSnapshot {
  readonly group: string;
  readonly types: Readonly<Record<ResourceKind, TypeSnapshot>>;
  /** A version's snapshot: the assignments of its services that fail over by locality. */
  readonly failover?: FailoverAssignments;
  /** A served snapshot: the group as served to callers in each locality, by caller key. */
  readonly localities?: ReadonlyMap<string, GroupSnapshot>;
}

/**
 * A type's resources in name order, found by name through an index made when names are looked up
 * more than a few times: a type patched by a one-resource change is a copy of the sorted list with
 * that resource replaced (a memory move), not a 10,000-entry map built again; the index is made
 * once for it by whatever serves it by name.
 */
class ByName implements ReadonlyMap<string, EncodedResource> {
  private index?: Map<string, EncodedResource>;
  private lookups = 0;

  constructor(readonly sorted: readonly EncodedResource[]) {}

  get size(): number {
    return this.sorted.length;
  }

  get(name: string): EncodedResource | undefined {
    if (this.index) return this.index.get(name);
    if (++this.lookups <= 32) return findByName(this.sorted, name);
    this.index = new Map(this.sorted.map((r) => [r.name, r]));
    return this.index.get(name);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  values(): MapIterator<EncodedResource> {
    return this.sorted.values();
  }

  *keys(): MapIterator<string> {
    for (const r of this.sorted) yield r.name;
  }

  *entries(): MapIterator<[string, EncodedResource]> {
    for (const r of this.sorted) yield [r.name, r];
  }

  [Symbol.iterator](): MapIterator<[string, EncodedResource]> {
    return this.entries();
  }

  forEach(fn: (value: EncodedResource, key: string, map: ReadonlyMap<string, EncodedResource>) => void): void {
    for (const r of this.sorted) fn(r, r.name, this);
  }
}

function sortedOf(t: TypeSnapshot): readonly EncodedResource[] {
  return t.resources instanceof ByName ? t.resources.sorted : [...t.resources.values()];
}

/**
 * A type's digest: the sum, lane by lane (two 32-bit lanes), of its resources' versions (the first
 * 64 bits of each one's content key, which covers its name). A sum does not depend on order, so a
 * patched type adds and subtracts the resources it changed instead of hashing every one again.
 */
type Digest = Uint32Array;
const DIGESTS = new WeakMap<TypeSnapshot, Digest>();

function addVersion(d: Digest, version: string, sign: 1 | -1): void {
  d[0] = d[0]! + sign * (parseInt(version.slice(0, 8), 16) || 0);
  d[1] = d[1]! + sign * (parseInt(version.slice(8, 16), 16) || 0);
}

function digestOf(t: TypeSnapshot): Digest {
  let d = DIGESTS.get(t);
  if (!d) {
    d = new Uint32Array(2);
    for (const r of t.resources.values()) addVersion(d, r.version, 1);
    DIGESTS.set(t, d);
  }
  return d;
}

function versionOf(kind: ResourceKind, d: Digest): string {
  return shortHash(`${kind}\n${d[0]!.toString(16)}.${d[1]!.toString(16)}`);
}

export function makeTypeSnapshot(kind: ResourceKind, resources: readonly EncodedResource[]): TypeSnapshot {
  const sorted = [...resources].sort(byName);
  const digest = new Uint32Array(2);
  for (const r of sorted) addVersion(digest, r.version, 1);
  const t = storedTypeSnapshot(kind, versionOf(kind, digest), sorted);
  DIGESTS.set(t, digest);
  return t;
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
  return { kind, version, resources: new ByName(sorted), wildcard: sorted.filter((r) => !r.namedOnly) };
}

/**
 * `prev` with the resources of `names` taken from `list` (the list it was made from, patched at
 * those names): its digest updated, its sorted list and wildcard list copied with those entries
 * replaced, and its diff from `prev` known at once for the streams. `prev` itself when nothing
 * changed.
 */
function patchTypeSnapshot(
  prev: TypeSnapshot,
  list: readonly EncodedResource[],
  names: ReadonlySet<string>,
): TypeSnapshot {
  const before = sortedOf(prev);
  const diff = { changed: [] as string[], added: [] as string[], removed: [] as EncodedResource[] };
  const digest = digestOf(prev).slice();
  const now = new Map<string, EncodedResource | undefined>();
  for (const name of names) {
    const old = findByName(before, name);
    const r = findByName(list, name);
    if (old === r) continue;
    now.set(name, r);
    if (old) addVersion(digest, old.version, -1);
    if (r) addVersion(digest, r.version, 1);
    if (!old) diff.added.push(name);
    else if (!r) diff.removed.push(old);
    else if (old.version !== r.version) diff.changed.push(name);
  }
  if (!now.size) return prev;
  const sorted = patchByName(before, now.keys(), (name) => now.get(name));
  const wildcard = patchByName(prev.wildcard, now.keys(), (name) => {
    const r = now.get(name);
    return r && !r.namedOnly ? r : undefined;
  });
  const t: TypeSnapshot = {
    kind: prev.kind,
    version: versionOf(prev.kind, digest),
    resources: new ByName(sorted),
    wildcard,
  };
  DIGESTS.set(t, digest);
  PATCHED.set(t, { from: new WeakRef(prev), names: [...now.keys()] });
  if (t.version !== prev.version) derive(t, DIFF_SPACE, prev.version, given, diff, DIFFS_KEPT);
  return t;
}

/** `prev` with some of its resources replaced by others of the same names (undefined: removed). */
export function replacedIn(
  prev: TypeSnapshot,
  replacements: ReadonlyMap<string, EncodedResource | undefined>,
): TypeSnapshot {
  const list = patchByName(sortedOf(prev), replacements.keys(), (name) => replacements.get(name));
  return patchTypeSnapshot(prev, list, new Set(replacements.keys()));
}

/** What a patched type was patched from, and at which names. */
const PATCHED = new WeakMap<TypeSnapshot, { from: WeakRef<TypeSnapshot>; names: readonly string[] }>();
const CHUNKS = new WeakMap<TypeSnapshot, readonly KeyChunk[]>();

/**
 * The type's resources in content-defined chunks (src/snapshot/key-chunks.ts), as the store keeps
 * them: cut again only around the changed names when the type was patched from one whose chunks
 * are known (the version stored before it).
 */
export function typeChunks(t: TypeSnapshot): readonly KeyChunk[] {
  let chunks = CHUNKS.get(t);
  if (!chunks) {
    const patch = PATCHED.get(t);
    const from = patch?.from.deref();
    const before = from && CHUNKS.get(from);
    chunks = before ? patchChunks(before, sortedOf(t), patch!.names) : chunksOf(sortedOf(t));
    CHUNKS.set(t, chunks);
  }
  return chunks;
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
 * re-hash; response bodies cached on it stay valid). A type whose list was patched from that list
 * (src/shared/sorted-lists.ts) is patched the same way.
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
      const source = prev && SOURCE.get(prev);
      if (prev && source === list) return [k, prev];
      const patch = patchedFrom(list);
      const made =
        prev && patch && source === patch.from
          ? patchTypeSnapshot(prev, list, patch.names)
          : prev && sameResources(prev, list)
            ? prev
            : makeTypeSnapshot(k, list);
      SOURCE.set(made, list);
      return [k, made];
    }),
  ) as Record<ResourceKind, TypeSnapshot>;
  return { group, types };
}

function sameResources(prev: TypeSnapshot, items: readonly EncodedResource[]): boolean {
  if (prev.resources.size !== items.length) return false;
  const sorted = sortedOf(prev);
  // Lists are in name order: compared item by item, not looked up.
  for (let i = 0; i < items.length; i++) if (sorted[i] !== items[i]) return false;
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
/** Diffs kept per type snapshot (from the versions streams were on). */
const DIFFS_KEPT = 16;
/** The diff from `from` to `to`, kept on `to` by `from`'s version (made by a patch, or computed when first asked). */
const DIFF_SPACE = 'diff-from';
/** derive()'s `make` for a value already at hand. */
const given = <T>(_on: unknown, value: T): T => value;

/**
 * What changed from `from` to `to`, computed once per pair and shared by every stream that moves
 * between them: a stream's push then costs what changed, not the size of the type.
 */
export function diffTypes(from: TypeSnapshot, to: TypeSnapshot): TypeDiff {
  if (from === to || from.version === to.version) return NO_DIFF;
  return derive(to, DIFF_SPACE, from.version, computeDiff, from, DIFFS_KEPT);
}

function computeDiff(to: TypeSnapshot, from: TypeSnapshot): TypeDiff {
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
}
