/**
 * Stored versions back as revisions, for a restart, a rollback, a pin or a rollout's starting
 * point: from the stored manifest and encoded bytes (nothing translated or encoded), or, for a
 * version stored before manifests existed, built again from its model. Restored revisions are kept
 * for reuse (a handful at most), so a pin and the rollback to the same version share one.
 */
import type { Logger } from 'pino';
import type { SecretMaterial } from '../model/types.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import { formatDiagnostic } from '../shared/diagnostics.ts';
import { buildConfig } from '../snapshot/build.ts';
import {
  makeGroupSnapshot,
  makeTypeSnapshot,
  storedTypeSnapshot,
  typeChunks,
  type GroupSnapshot,
} from '../snapshot/group-snapshot.ts';
import { RESOURCE_KINDS } from '../xds/resource-types.ts';
import { failoverAssignments } from '../snapshot/locality.ts';
import {
  makeRevision,
  revisionGroups,
  storedRevision,
  type Revision,
  type RevisionGroup,
} from '../snapshot/revision.ts';
import type { RevisionStore, StoredVersion, VersionManifest } from '../store/revisions.ts';
import { SECRET_PREFIX } from '../store/revisions.ts';
import type { PipelineCaches } from '../compile/caches.ts';

const MAX_CACHED_REVISIONS = 8;

export class RevisionLoader {
  private readonly restored = new Map<number, Revision>();

  constructor(
    private readonly store: RevisionStore,
    private readonly caches: PipelineCaches,
    private readonly log: Logger,
  ) {}

  /** Version `id` as a revision (restored once, then reused); throws FXDS_UNKNOWN_VERSION. */
  get(id: number, current?: Revision): Revision {
    if (current?.id === id) return current;
    const hit = this.restored.get(id);
    if (hit) return hit;
    const record = this.store.get(id);
    const revision = record && this.restore(record);
    if (!revision)
      throw new FleetError(
        ErrorCodes.UNKNOWN_VERSION,
        `unknown version ${id}: it does not exist or has no stored resources`,
      );
    if (this.restored.size >= MAX_CACHED_REVISIONS) this.restored.delete(this.restored.keys().next().value as number);
    this.restored.set(id, revision);
    return revision;
  }

  /** A stored version already read, restored or (older databases) rebuilt with `material`. */
  fromRecord(record: StoredVersion, material: ReadonlyMap<string, SecretMaterial>): Revision | undefined {
    return this.restore(record) ?? this.rebuild(record, material);
  }

  /** From the stored manifest and encoded bytes: nothing translated or encoded. */
  private restore(record: StoredVersion): Revision | undefined {
    const { typed, flat } = this.store.servedManifest(record.id) ?? {};
    const keys = typed
      ? Object.values(typed).flatMap((g) => g.types.flatMap((t) => t.keys))
      : flat && Object.values(flat).flat();
    const stored = keys && this.store.resources(keys);
    if (!stored) return undefined;
    const restore = (k: string) => {
      const r = stored.get(k)!;
      return this.caches.encoder.restore(r.kind, r.name, r.key, r.stored, this.store.json);
    };
    const groups = new Map<string, RevisionGroup>();
    if (typed)
      for (const [group, g] of Object.entries(typed)) {
        const types = Object.fromEntries(
          RESOURCE_KINDS.map((kind) => {
            const t = g.types.find((x) => x.kind === kind);
            return [kind, t ? storedTypeSnapshot(kind, t.version, t.keys.map(restore)) : makeTypeSnapshot(kind, [])];
          }),
        ) as GroupSnapshot['types'];
        const failover = g.failover && failoverAssignments(types.endpoint, g.failover, this.caches.encoder);
        groups.set(group, { snapshot: { group, types, ...(failover && { failover }) }, secretNames: g.secrets });
      }
    else
      for (const [group, keys] of Object.entries(flat!)) {
        const secretNames = keys.filter((k) => k.startsWith(SECRET_PREFIX)).map((k) => k.slice(SECRET_PREFIX.length));
        const resources = keys.filter((k) => !k.startsWith(SECRET_PREFIX)).map(restore);
        groups.set(group, { snapshot: makeGroupSnapshot(group, resources), secretNames });
      }
    return storedRevision({ ...revisionFields(record), groups }, record.head, () => record.model);
  }

  /** A version stored without a manifest (older databases): built again from its model. */
  private rebuild(record: StoredVersion, material: ReadonlyMap<string, SecretMaterial>): Revision | undefined {
    const built = buildConfig(record.model, this.caches, undefined, material);
    if (!built.config) {
      // Only possible if this build of fleetxds rejects what an older one accepted.
      this.log.error(
        { versionId: record.id, problems: built.diagnostics.map(formatDiagnostic) },
        'stored version no longer builds; waiting for the directory',
      );
      return undefined;
    }
    return makeRevision({
      ...revisionFields(record),
      model: record.model,
      groups: revisionGroups(built.config.groups),
    });
  }
}

function revisionFields(r: StoredVersion): Omit<Revision, 'resolver' | 'groups' | 'model'> {
  return {
    id: r.id,
    modelHash: r.modelHash,
    treeHash: r.treeHash,
    appliedAt: r.appliedAt,
    commit: r.commitSha ?? undefined,
    subject: r.subject ?? undefined,
  };
}

/**
 * What a version serves, for the store: per group, each resource type by its content version
 * (its chunks and encoded resources read only for types the store does not have) and secrets by name
 * (they hold private keys: the store keeps only names; material is re-read from files).
 */
export function versionManifest(groups: ReadonlyMap<string, RevisionGroup>): VersionManifest {
  const out: VersionManifest = {};
  for (const [name, g] of groups)
    out[name] = {
      types: Object.values(g.snapshot.types).map((t) => ({
        kind: t.kind,
        version: t.version,
        chunks: () => typeChunks(t),
      })),
      secrets: g.secretNames,
      ...(g.snapshot.failover && { failover: [...g.snapshot.failover.keys()] }),
    };
  return out;
}
