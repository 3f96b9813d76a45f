/**
 * An applied version as the reconciler sees it: immutable, built once (by an apply) or restored
 * once (from the store, for a restart, a rollback or a pin), then shared by every publish that
 * serves it. Secret material is not part of it: a revision only names the secrets each group
 * references, and their current material is an input of its own.
 */
import { NodeGroupResolver } from '../model/node-groups.ts';
import type { Model } from '../model/types.ts';
import { makeTypeSnapshot, type GroupSnapshot } from './group-snapshot.ts';

export interface RevisionGroup {
  /** Every type but secrets (the secret type is empty here). */
  readonly snapshot: GroupSnapshot;
  /** Secrets the group's listeners and clusters reference, served from the current material. */
  readonly secretNames: readonly string[];
}

export interface Revision {
  /** Row id in config_versions. */
  readonly id: number;
  readonly modelHash: string;
  readonly treeHash: string;
  readonly appliedAt: string;
  readonly commit?: string;
  /** The commit subject (or what a rollback says it rolled back to), as recorded. */
  readonly subject?: string;
  readonly model: Model;
  readonly resolver: NodeGroupResolver;
  readonly groups: ReadonlyMap<string, RevisionGroup>;
}

const NO_SECRETS = makeTypeSnapshot('secret', []);

/** Splits built group snapshots into what a revision keeps: snapshots without secrets, and secret names. */
export function revisionGroups(built: ReadonlyMap<string, GroupSnapshot>): Map<string, RevisionGroup> {
  const out = new Map<string, RevisionGroup>();
  for (const [name, g] of built) {
    out.set(name, {
      snapshot: { group: name, types: { ...g.types, secret: NO_SECRETS }, ...(g.failover && { failover: g.failover }) },
      secretNames: [...g.types.secret.resources.keys()],
    });
  }
  return out;
}

export function makeRevision(fields: Omit<Revision, 'resolver'>): Revision {
  return { ...fields, resolver: NodeGroupResolver.forModel(fields.model) };
}

/**
 * A revision read back from the store: nodes are placed by `head` (a model holding at least the
 * node groups), and the whole model is read when something first asks for it.
 */
export function storedRevision(
  fields: Omit<Revision, 'resolver' | 'model'>,
  head: Model,
  model: () => Model,
): Revision {
  const revision = { ...fields, resolver: NodeGroupResolver.forModel(head) };
  Object.defineProperty(revision, 'model', { enumerable: true, get: model });
  return revision as Revision;
}
