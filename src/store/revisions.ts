/**
 * Applied versions, each with the encoded resources it serves: a version row (model, provenance,
 * warnings), the content-addressed encoded resources (stored once, shared by every version that
 * uses them) and a manifest naming, per node group, which resources the version serves.
 * Secret material is never stored: a manifest names secrets as `secret:<name>`.
 */
import type { Model } from '../model/types.ts';
import type { Diagnostic } from '../shared/diagnostics.ts';
import type { ResourceKind } from '../xds/resource-types.ts';
import type { Sqlite } from './sqlite.ts';

export type SourceKind = 'directory' | 'git' | 'rollback';

/** Manifest entries naming a secret, whose material is read from files, never from the store. */
export const SECRET_PREFIX = 'secret:';

export interface VersionInput {
  treeHash: string;
  modelHash: string;
  sourceKind: SourceKind;
  source: string;
  commitSha?: string;
  author?: string;
  subject?: string;
  model: Model;
  warnings: Diagnostic[];
}

export interface VersionRecord {
  id: number;
  treeHash: string;
  modelHash: string;
  sourceKind: SourceKind;
  source: string;
  commitSha: string | null;
  author: string | null;
  subject: string | null;
  appliedAt: string;
  warnings: Diagnostic[];
}

export interface StoredResource {
  key: string;
  kind: ResourceKind;
  name: string;
  /** Parsed object when writing; JSON text when loading (parsed only if someone needs it). */
  json: Record<string, unknown> | string;
  any: Buffer;
}

/** Per node group, the keys of the resources a version serves (`secret:<name>` for secrets). */
export type Manifest = Record<string, string[]>;

export interface GroupChanges {
  added: string[];
  changed: string[];
  removed: string[];
}

interface VersionRow {
  id: number;
  tree_hash: string;
  model_hash: string;
  source_kind: SourceKind;
  source: string;
  commit_sha: string | null;
  author: string | null;
  subject: string | null;
  applied_at: string;
  warnings_json: string;
}

function toRecord(r: VersionRow): VersionRecord {
  return {
    id: r.id,
    treeHash: r.tree_hash,
    modelHash: r.model_hash,
    sourceKind: r.source_kind,
    source: r.source,
    commitSha: r.commit_sha,
    author: r.author,
    subject: r.subject,
    appliedAt: r.applied_at,
    warnings: JSON.parse(r.warnings_json),
  };
}

const VERSION_COLUMNS =
  'id, tree_hash, model_hash, source_kind, source, commit_sha, author, subject, applied_at, warnings_json';

export class RevisionStore {
  /** Keys already in encoded_resources (loaded on first insert), so an apply inserts only new ones. */
  private storedKeys?: Set<string>;

  constructor(private readonly db: Sqlite) {}

  /**
   * Records a version, the encoded resources it introduces and its manifest in one transaction:
   * after a crash either all of it is there or none. Resources already stored are skipped.
   */
  insert(v: VersionInput, resources: Iterable<StoredResource>, manifest: Manifest, at = new Date()): number {
    this.storedKeys ??= new Set(this.db.prepare('SELECT key FROM encoded_resources').pluck().all() as string[]);
    const known = this.storedKeys;
    const fresh = [...resources].filter((r) => !known.has(r.key));
    const id = this.db
      .transaction(() => {
        const info = this.db
          .prepare(
            `INSERT INTO config_versions
             (tree_hash, model_hash, source_kind, source, commit_sha, author, subject, applied_at,
              model_json, warnings_json)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            v.treeHash,
            v.modelHash,
            v.sourceKind,
            v.source,
            v.commitSha ?? null,
            v.author ?? null,
            v.subject ?? null,
            at.toISOString(),
            JSON.stringify(v.model),
            JSON.stringify(v.warnings),
          );
        const versionId = Number(info.lastInsertRowid);
        const ins = this.db.prepare(
          'INSERT OR IGNORE INTO encoded_resources (key, kind, name, json, any) VALUES (?, ?, ?, ?, ?)',
        );
        for (const r of fresh)
          ins.run(r.key, r.kind, r.name, typeof r.json === 'string' ? r.json : JSON.stringify(r.json), r.any);
        this.db
          .prepare('INSERT INTO version_manifests (version_id, manifest_json) VALUES (?, ?)')
          .run(versionId, JSON.stringify(manifest));
        return versionId;
      })
      .immediate();
    for (const r of fresh) known.add(r.key);
    return id;
  }

  get(id: number): (VersionRecord & { model: Model }) | undefined {
    const row = this.db.prepare(`SELECT ${VERSION_COLUMNS}, model_json FROM config_versions WHERE id = ?`).get(id) as
      (VersionRow & { model_json: string }) | undefined;
    return row ? { ...toRecord(row), model: JSON.parse(row.model_json) as Model } : undefined;
  }

  /** The newest version with this model hash (shared decisions name versions by content, ids are per replica). */
  idOfModel(modelHash: string): number | undefined {
    const row = this.db.prepare('SELECT MAX(id) AS id FROM config_versions WHERE model_hash = ?').get(modelHash) as {
      id: number | null;
    };
    return row.id ?? undefined;
  }

  latest(): (VersionRecord & { model: Model }) | undefined {
    const row = this.db.prepare('SELECT MAX(id) AS id FROM config_versions').get() as { id: number | null };
    return row.id === null ? undefined : this.get(row.id);
  }

  list(limit = 50): VersionRecord[] {
    const rows = this.db
      .prepare(`SELECT ${VERSION_COLUMNS} FROM config_versions ORDER BY id DESC LIMIT ?`)
      .all(limit) as VersionRow[];
    return rows.map(toRecord);
  }

  manifest(versionId: number): Manifest | undefined {
    const row = this.db.prepare('SELECT manifest_json FROM version_manifests WHERE version_id = ?').get(versionId) as
      { manifest_json: string } | undefined;
    return row ? (JSON.parse(row.manifest_json) as Manifest) : undefined;
  }

  /** The stored resources a manifest names (secrets excluded); undefined if any is missing. */
  resources(manifest: Manifest): Map<string, StoredResource> | undefined {
    const wanted = new Set(
      Object.values(manifest)
        .flat()
        .filter((k) => !k.startsWith(SECRET_PREFIX)),
    );
    const out = new Map<string, StoredResource>();
    const rows = this.db
      .prepare('SELECT key, kind, name, json, any FROM encoded_resources WHERE key IN (SELECT value FROM json_each(?))')
      .iterate(JSON.stringify([...wanted])) as Iterable<{
      key: string;
      kind: ResourceKind;
      name: string;
      json: string;
      any: Buffer;
    }>;
    for (const r of rows) out.set(r.key, r);
    return out.size === wanted.size ? out : undefined;
  }

  /** What changed between two versions, per node group (`kind/name` of resources added, changed, removed). */
  diff(fromId: number, toId: number): Record<string, GroupChanges> | undefined {
    const a = this.manifest(fromId);
    const b = this.manifest(toId);
    if (!a || !b) return undefined;
    const names = this.kindAndName([...Object.values(a).flat(), ...Object.values(b).flat()]);
    const label = (k: string) =>
      k.startsWith(SECRET_PREFIX) ? `secret/${k.slice(SECRET_PREFIX.length)}` : `${names.get(k) ?? `?/${k}`}`;
    const out: Record<string, GroupChanges> = {};
    for (const group of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const before = new Map((a[group] ?? []).map((k) => [label(k), k]));
      const after = new Map((b[group] ?? []).map((k) => [label(k), k]));
      const d: GroupChanges = { added: [], changed: [], removed: [] };
      for (const [n, k] of after) {
        if (!before.has(n)) d.added.push(n);
        else if (before.get(n) !== k) d.changed.push(n);
      }
      for (const n of before.keys()) if (!after.has(n)) d.removed.push(n);
      if (d.added.length || d.changed.length || d.removed.length)
        out[group] = { added: d.added.sort(), changed: d.changed.sort(), removed: d.removed.sort() };
    }
    return out;
  }

  /** `kind/name` of stored resources by key. */
  private kindAndName(keys: Iterable<string>): Map<string, string> {
    const stmt = this.db.prepare('SELECT kind, name FROM encoded_resources WHERE key = ?');
    const out = new Map<string, string>();
    for (const k of new Set(keys)) {
      if (k.startsWith(SECRET_PREFIX)) continue;
      const r = stmt.get(k) as { kind: string; name: string } | undefined;
      if (r) out.set(k, `${r.kind}/${r.name}`);
    }
    return out;
  }
}
