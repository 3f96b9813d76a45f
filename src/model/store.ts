import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Diagnostic } from '../shared/diagnostics.ts';
import { projectPath } from '../shared/paths.ts';
import { migrate } from './migrate.ts';
import type { Model } from './types.ts';

export type SourceKind = 'directory' | 'git' | 'rollback';

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
  kind: 'cluster' | 'endpoint' | 'listener' | 'route' | 'secret';
  name: string;
  /** Parsed object when writing; JSON text when loading (parsed only if someone needs it). */
  json: Record<string, unknown> | string;
  any: Buffer;
}

export interface NackEvent {
  at: string;
  nodeId: string;
  nodeCluster: string;
  nodeGroup: string;
  transport: string;
  typeUrl: string;
  version: string;
  nonce: string;
  errorCode: number;
  message: string;
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

/**
 * The SQLite store of applied versions. WAL for concurrent readers (CLI, admin) and
 * synchronous=FULL: an apply happens once per push, so making "applied" mean "durable" is free.
 */
export class Store {
  readonly db: Database.Database;

  constructor(path: string, migrationsDir = projectPath('migrations')) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path, { timeout: 5000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    migrate(this.db, migrationsDir);
  }

  /** Records a new applied version in one transaction; returns its id. */
  insertVersion(v: VersionInput, at = new Date()): number {
    const info = this.db
      .prepare(`INSERT INTO config_versions (tree_hash, model_hash, source_kind, source, commit_sha, author, subject, applied_at, model_json, warnings_json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
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
    return Number(info.lastInsertRowid);
  }

  /** Keys of the encoded resources already stored (so an apply only inserts new ones). */
  storedResourceKeys(): Set<string> {
    return new Set(this.db.prepare('SELECT key FROM encoded_resources').pluck().all() as string[]);
  }

  /**
   * Records a version, the encoded resources it introduces and its manifest (resource keys per
   * group) in one transaction: after a crash either all of it is there or none.
   */
  insertVersionWithResources(
    v: VersionInput,
    resources: StoredResource[],
    manifest: Record<string, string[]>,
    at = new Date(),
  ): number {
    return this.db
      .transaction(() => {
        const id = this.insertVersion(v, at);
        const ins = this.db.prepare(
          'INSERT OR IGNORE INTO encoded_resources (key, kind, name, json, any) VALUES (?, ?, ?, ?, ?)',
        );
        for (const r of resources)
          ins.run(r.key, r.kind, r.name, typeof r.json === 'string' ? r.json : JSON.stringify(r.json), r.any);
        this.db
          .prepare('INSERT INTO version_manifests (version_id, manifest_json) VALUES (?, ?)')
          .run(id, JSON.stringify(manifest));
        return id;
      })
      .immediate();
  }

  /** The manifest of a version and the stored resources it names; undefined if it has none. */
  loadManifest(
    versionId: number,
  ): { manifest: Record<string, string[]>; resources: Map<string, StoredResource> } | undefined {
    const row = this.db.prepare('SELECT manifest_json FROM version_manifests WHERE version_id = ?').get(versionId) as
      | { manifest_json: string }
      | undefined;
    if (!row) return undefined;
    const manifest = JSON.parse(row.manifest_json) as Record<string, string[]>;
    // `secret:<name>` entries name secrets, whose material is never stored.
    const wanted = new Set(
      Object.values(manifest)
        .flat()
        .filter((k) => !k.startsWith('secret:')),
    );
    const resources = new Map<string, StoredResource>();
    const rows = this.db
      .prepare('SELECT key, kind, name, json, any FROM encoded_resources WHERE key IN (SELECT value FROM json_each(?))')
      .iterate(JSON.stringify([...wanted])) as Iterable<{
      key: string;
      kind: string;
      name: string;
      json: string;
      any: Buffer;
    }>;
    for (const r of rows)
      resources.set(r.key, {
        key: r.key,
        kind: r.kind as StoredResource['kind'],
        name: r.name,
        json: r.json,
        any: r.any,
      });
    return resources.size === wanted.size ? { manifest, resources } : undefined;
  }

  getVersion(id: number): (VersionRecord & { model: Model }) | undefined {
    const row = this.db.prepare(`SELECT ${VERSION_COLUMNS}, model_json FROM config_versions WHERE id = ?`).get(id) as
      | (VersionRow & { model_json: string })
      | undefined;
    return row ? { ...toRecord(row), model: JSON.parse(row.model_json) as Model } : undefined;
  }

  commitOf(versionId: number): string | undefined {
    const r = this.db.prepare('SELECT commit_sha FROM config_versions WHERE id = ?').get(versionId) as
      | { commit_sha: string | null }
      | undefined;
    return r?.commit_sha ?? undefined;
  }

  manifestOf(versionId: number): Record<string, string[]> | undefined {
    const row = this.db.prepare('SELECT manifest_json FROM version_manifests WHERE version_id = ?').get(versionId) as
      | { manifest_json: string }
      | undefined;
    return row ? (JSON.parse(row.manifest_json) as Record<string, string[]>) : undefined;
  }

  /** kind and name of stored resources by key. */
  resourceNames(keys: Iterable<string>): Map<string, { kind: string; name: string }> {
    const stmt = this.db.prepare('SELECT kind, name FROM encoded_resources WHERE key = ?');
    const out = new Map<string, { kind: string; name: string }>();
    for (const k of keys) {
      const r = stmt.get(k) as { kind: string; name: string } | undefined;
      if (r) out.set(k, r);
    }
    return out;
  }

  listPins(): { group: string; versionId: number; pinnedAt: string; actor: string }[] {
    return (
      this.db.prepare('SELECT node_group, version_id, pinned_at, actor FROM group_pins ORDER BY node_group').all() as {
        node_group: string;
        version_id: number;
        pinned_at: string;
        actor: string;
      }[]
    ).map((r) => ({ group: r.node_group, versionId: r.version_id, pinnedAt: r.pinned_at, actor: r.actor }));
  }

  setPin(group: string, versionId: number, actor: string): void {
    this.db.transaction(() => {
      this.db
        .prepare(
          'INSERT INTO group_pins (node_group, version_id, pinned_at, actor) VALUES (?, ?, ?, ?) ON CONFLICT (node_group) DO UPDATE SET version_id = excluded.version_id, pinned_at = excluded.pinned_at, actor = excluded.actor',
        )
        .run(group, versionId, new Date().toISOString(), actor);
      this.audit(actor, 'pin', JSON.stringify({ group, versionId }));
    })();
  }

  deletePin(group: string, actor: string): boolean {
    return this.db.transaction(() => {
      const n = this.db.prepare('DELETE FROM group_pins WHERE node_group = ?').run(group).changes;
      if (n) this.audit(actor, 'unpin', JSON.stringify({ group }));
      return n > 0;
    })();
  }

  audit(actor: string, action: string, detail: string): void {
    this.db
      .prepare('INSERT INTO audit_log (at, actor, action, detail) VALUES (?, ?, ?, ?)')
      .run(new Date().toISOString(), actor, action, detail);
  }

  listAudit(limit = 100): { at: string; actor: string; action: string; detail: string }[] {
    return this.db.prepare('SELECT at, actor, action, detail FROM audit_log ORDER BY id DESC LIMIT ?').all(limit) as {
      at: string;
      actor: string;
      action: string;
      detail: string;
    }[];
  }

  latestVersion(): (VersionRecord & { model: Model }) | undefined {
    const row = this.db
      .prepare(`SELECT ${VERSION_COLUMNS}, model_json FROM config_versions ORDER BY id DESC LIMIT 1`)
      .get() as (VersionRow & { model_json: string }) | undefined;
    return row ? { ...toRecord(row), model: JSON.parse(row.model_json) as Model } : undefined;
  }

  getModel(id: number): Model | undefined {
    const row = this.db.prepare('SELECT model_json FROM config_versions WHERE id = ?').get(id) as
      | { model_json: string }
      | undefined;
    return row ? (JSON.parse(row.model_json) as Model) : undefined;
  }

  listVersions(limit = 50): VersionRecord[] {
    return (
      this.db
        .prepare(`SELECT ${VERSION_COLUMNS} FROM config_versions ORDER BY id DESC LIMIT ?`)
        .all(limit) as VersionRow[]
    ).map(toRecord);
  }

  recordRejection(treeHash: string, source: string, diagnostics: Diagnostic[], at = new Date()): number {
    const info = this.db
      .prepare('INSERT INTO rejected_trees (tree_hash, source, rejected_at, diagnostics_json) VALUES (?, ?, ?, ?)')
      .run(treeHash, source, at.toISOString(), JSON.stringify(diagnostics));
    return Number(info.lastInsertRowid);
  }

  latestRejection():
    | { id: number; treeHash: string; source: string; rejectedAt: string; diagnostics: Diagnostic[] }
    | undefined {
    const r = this.db
      .prepare(
        'SELECT id, tree_hash, source, rejected_at, diagnostics_json FROM rejected_trees ORDER BY id DESC LIMIT 1',
      )
      .get() as
      | { id: number; tree_hash: string; source: string; rejected_at: string; diagnostics_json: string }
      | undefined;
    return (
      r && {
        id: r.id,
        treeHash: r.tree_hash,
        source: r.source,
        rejectedAt: r.rejected_at,
        diagnostics: JSON.parse(r.diagnostics_json),
      }
    );
  }

  recordNack(e: NackEvent): void {
    this.db
      .prepare(
        'INSERT INTO nack_events (at, node_id, node_cluster, node_group, transport, type_url, version, nonce, error_code, message) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        e.at,
        e.nodeId,
        e.nodeCluster,
        e.nodeGroup,
        e.transport,
        e.typeUrl,
        e.version,
        e.nonce,
        e.errorCode,
        e.message,
      );
  }

  listNacks(nodeId?: string, limit = 100): NackEvent[] {
    const rows = (
      nodeId
        ? this.db.prepare('SELECT * FROM nack_events WHERE node_id = ? ORDER BY id DESC LIMIT ?').all(nodeId, limit)
        : this.db.prepare('SELECT * FROM nack_events ORDER BY id DESC LIMIT ?').all(limit)
    ) as Record<string, string | number>[];
    return rows.map((r) => ({
      at: String(r.at),
      nodeId: String(r.node_id),
      nodeCluster: String(r.node_cluster),
      nodeGroup: String(r.node_group),
      transport: String(r.transport),
      typeUrl: String(r.type_url),
      version: String(r.version),
      nonce: String(r.nonce),
      errorCode: Number(r.error_code),
      message: String(r.message),
    }));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
