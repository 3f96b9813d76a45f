import { shortHash } from '../shared/hash.ts';
import { RESOURCE_KINDS, type ResourceKind } from '../xds/resource-types.ts';
import type { Derivable } from './derived.ts';
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

export function makeTypeSnapshot(kind: ResourceKind, resources: EncodedResource[]): TypeSnapshot {
  const sorted = [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const version = shortHash(`${kind}\n${sorted.map((r) => `${r.name}\u0000${r.version}`).join('\n')}`);
  return {
    kind,
    version,
    resources: new Map(sorted.map((r) => [r.name, r])),
    wildcard: sorted.filter((r) => !r.namedOnly),
  };
}

/**
 * `previous`: the group's last snapshot. A type whose resources are the very same encoded objects
 * keeps its TypeSnapshot (no re-sort, no re-hash; response bodies cached on it stay valid).
 */
export function makeGroupSnapshot(
  group: string,
  resources: EncodedResource[],
  previous?: GroupSnapshot,
): GroupSnapshot {
  const byKind = Object.fromEntries(RESOURCE_KINDS.map((k) => [k, [] as EncodedResource[]])) as Record<
    ResourceKind,
    EncodedResource[]
  >;
  for (const r of resources) byKind[r.kind].push(r);
  const types = Object.fromEntries(
    RESOURCE_KINDS.map((k) => [
      k,
      sameResources(previous?.types[k], byKind[k]) ? previous!.types[k] : makeTypeSnapshot(k, byKind[k]),
    ]),
  ) as Record<ResourceKind, TypeSnapshot>;
  return { group, types };
}

function sameResources(prev: TypeSnapshot | undefined, items: readonly EncodedResource[]): boolean {
  if (!prev || prev.resources.size !== items.length) return false;
  for (const r of items) if (prev.resources.get(r.name) !== r) return false;
  return true;
}
