/**
 * Applied versions, each with the encoded resources it serves: a version row (model, provenance,
 * warnings), the content-addressed encoded resources (stored once, shared by every version that
 * uses them) and a manifest naming, per node group, which resources the version serves.
 * Secret material is never stored: a manifest names secrets as `secret:<name>`.
 */
import type { Model } from '../model/types.ts';
import type { Diagnostic } from '../shared/diagnostics.ts';
import type { EncodedResource, ResourceParts, StoredJson } from '../snapshot/encoder.ts';
import type { ResourceKind } from '../xds/resource-types.ts';
import { packModel, unpackHead, unpackModel } from './model-pack.ts';
import type { Sqlite, Statement } from './sqlite.ts';

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

/** A stored version with its model (read on first use) and its head documents (see unpackHead). */
export interface StoredVersion extends VersionRecord {
  readonly model: Model;
  /** Its node groups, secrets and rollouts: a model with only those lists (the model itself for older rows). */
  readonly head: Model;
}

/** A resource as a version to store hands it over: an encoded resource. */
export type StoredResource = Pick<EncodedResource, 'key' | 'kind' | 'name' | 'json' | 'any' | 'parts'>;

/** A resource read back: its Any bytes or the parts to rebuild them from (its JSON: RevisionStore.json). */
export interface LoadedResource {
  key: string;
  kind: ResourceKind;
  name: string;
  stored: Buffer | ResourceParts;
}

/** Per node group, the keys of the resources a version serves (`secret:<name>` for secrets). */
export type Manifest = Record<string, string[]>;

/**
 * Per node group, each type's version and keys (in name order), the names of its secrets, and the
 * services whose callers are served their endpoints by distance (made again from the stored ones).
 */
export type TypedManifest = Record<
  string,
  { types: { kind: ResourceKind; version: string; keys: string[] }[]; secrets: string[]; failover?: string[] }
>;

/**
 * One resource type of one group, as a version to store names it: by its content version, with
 * its chunks (src/snapshot/key-chunks.ts) read only if the store does not have that type version
 * yet, and a chunk's resources only if the store does not have that chunk.
 */
export interface StoredType {
  kind: ResourceKind;
  /** The type's content version: the same for every group and version serving the same resources. */
  version: string;
  chunks(): readonly { readonly hash: string; readonly resources: readonly StoredResource[] }[];
}

/** How a type is named in type_manifests and manifests: `kind:version`. */
function typeKey(t: { kind: ResourceKind; version: string }): string {
  return `${t.kind}:${t.version}`;
}

function typeOfKey(key: string): { kind: ResourceKind; version: string } {
  const at = key.indexOf(':');
  return { kind: key.slice(0, at) as ResourceKind, version: key.slice(at + 1) };
}

/** A version's manifest as stored: typed (since type manifests exist) or, for older versions, flat. */
export type ServedManifest = { typed: TypedManifest; flat?: never } | { flat: Manifest; typed?: never };

/** What a version serves, per node group: its types, the names of its secrets and of its failover services. */
export type VersionManifest = Record<
  string,
  { types: StoredType[]; secrets: readonly string[]; failover?: readonly string[] }
>;

/** A type_manifests row's keys_json: the keys in name order (older rows), or its key chunks' hashes. */
type TypeKeysJson = string[] | { chunks: string[] };

interface TypedManifestJson {
  typed: 1;
  groups: Record<string, { types: string[]; secrets: string[]; failover?: string[] }>;
}

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
    warnings: JSON.parse(r.warnings_json) as Diagnostic[],
  };
}

const VERSION_COLUMNS =
  'id, tree_hash, model_hash, source_kind, source, commit_sha, author, subject, applied_at, warnings_json';

export class RevisionStore {
  /** Keys already in encoded_resources (loaded on first insert), so an apply inserts only new ones. */
  private storedKeys?: Set<string>;
  /** Type keys already in type_manifests (loaded on first insert). */
  private storedTypes?: Set<string>;
  /** Keys already in resource_parts (loaded on first insert). */
  private storedParts?: Set<string>;
  /** Model chunks already in model_chunks (loaded on first insert). */
  private storedChunks?: Set<string>;
  /** Key chunks already in key_chunks (loaded on first insert). */
  private storedKeyChunks?: Set<string>;

  constructor(private readonly db: Sqlite) {}

  /** Stored JSON texts by key, read when asked (see StoredJson). */
  readonly json: StoredJson = {
    resource: (key) => this.storedText('resource', key),
    part: (key) => this.storedText('part', key),
  };
  private textQueries?: Record<'resource' | 'part', Statement>;

  private storedText(what: 'resource' | 'part', key: string): string {
    const query = (this.textQueries ??= {
      resource: this.db.prepare('SELECT json FROM encoded_resources WHERE key = ?').pluck(),
      part: this.db.prepare('SELECT json FROM resource_parts WHERE key = ?').pluck(),
    })[what];
    const text = query.get(key) as string | undefined;
    if (text === undefined) throw new Error(`stored ${what} ${key} is missing`);
    return text;
  }

  /** The values of a one-column query, as a set (the keys a table already holds). */
  private column(sql: string): Set<string> {
    return new Set(this.db.prepare(sql).pluck().all() as string[]);
  }

  /**
   * Records a version in one transaction: its row (model packed by file), the resource types and
   * encoded resources it introduces, its manifest. After a crash either all of it is there or
   * none. Types and resources already stored are skipped without being read.
   */
  insert(v: VersionInput, manifest: VersionManifest, at = new Date()): number {
    this.storedKeys ??= this.column('SELECT key FROM encoded_resources');
    this.storedTypes ??= this.column('SELECT type_key FROM type_manifests');
    const knownKeys = this.storedKeys;
    const knownTypes = this.storedTypes;
    const knownParts = (this.storedParts ??= this.column('SELECT key FROM resource_parts'));
    const newTypes = new Map<string, StoredType>();
    for (const g of Object.values(manifest))
      for (const t of g.types) if (!knownTypes.has(typeKey(t))) newTypes.set(typeKey(t), t);
    const knownKeyChunks = (this.storedKeyChunks ??= this.column('SELECT hash FROM key_chunks'));
    const fresh = new Map<string, StoredResource>();
    const newKeyChunks = new Map<string, string>();
    const typeRows = new Map<string, string>();
    for (const [k, t] of newTypes) {
      const chunks = t.chunks();
      typeRows.set(k, JSON.stringify({ chunks: chunks.map((c) => c.hash) } satisfies TypeKeysJson));
      for (const c of chunks) {
        if (knownKeyChunks.has(c.hash) || newKeyChunks.has(c.hash)) continue;
        newKeyChunks.set(c.hash, JSON.stringify(c.resources.map((r) => r.key)));
        for (const r of c.resources) if (!knownKeys.has(r.key)) fresh.set(r.key, r);
      }
    }
    const typed: TypedManifestJson = { typed: 1, groups: {} };
    for (const [group, g] of Object.entries(manifest))
      typed.groups[group] = {
        types: g.types.map(typeKey),
        secrets: [...g.secrets],
        ...(g.failover?.length && { failover: [...g.failover] }),
      };
    const model = packModel(v.model);
    const knownChunks = (this.storedChunks ??= this.column('SELECT hash FROM model_chunks'));
    const newChunks = model.chunks.filter((c) => !knownChunks.has(c.hash));
    const newParts: string[] = [];
    const id = this.db
      .transaction(() => {
        const chunk = this.db.prepare('INSERT OR IGNORE INTO model_chunks (hash, json) VALUES (?, ?)');
        for (const c of newChunks) chunk.run(c.hash, c.json);
        const info = this.db
          .prepare(
            `INSERT INTO config_versions
             (tree_hash, model_hash, source_kind, source, commit_sha, author, subject, applied_at,
              model_json, warnings_json, head_json)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
            model.skeleton,
            JSON.stringify(v.warnings),
            model.head,
          );
        const versionId = Number(info.lastInsertRowid);
        const ins = this.db.prepare(
          `INSERT OR IGNORE INTO encoded_resources (key, kind, name, json, any, parts, rest)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
        );
        const part = this.db.prepare('INSERT OR IGNORE INTO resource_parts (key, json, framed) VALUES (?, ?, ?)');
        for (const r of fresh.values()) {
          const p = r.parts;
          if (!p) {
            ins.run(r.key, r.kind, r.name, JSON.stringify(r.json), r.any, null, null);
            continue;
          }
          // Only the parts the store does not have yet: a one-route edit writes one virtual host.
          const entries = r.json[p.field] as unknown[];
          p.entries.forEach((e, i) => {
            if (knownParts.has(e.key)) return;
            part.run(e.key, JSON.stringify(entries[i]), e.framed);
            newParts.push(e.key);
          });
          const keys = JSON.stringify({ field: p.field, keys: p.entries.map((e) => e.key) });
          ins.run(r.key, r.kind, r.name, JSON.stringify({ ...r.json, [p.field]: null }), Buffer.alloc(0), keys, p.rest);
        }
        const keyChunk = this.db.prepare('INSERT OR IGNORE INTO key_chunks (hash, keys_json) VALUES (?, ?)');
        for (const [hash, keys] of newKeyChunks) keyChunk.run(hash, keys);
        const type = this.db.prepare('INSERT OR IGNORE INTO type_manifests (type_key, keys_json) VALUES (?, ?)');
        for (const [k, row] of typeRows) type.run(k, row);
        this.db
          .prepare('INSERT INTO version_manifests (version_id, manifest_json) VALUES (?, ?)')
          .run(versionId, JSON.stringify(typed));
        return versionId;
      })
      .immediate();
    for (const k of fresh.keys()) knownKeys.add(k);
    for (const k of newTypes.keys()) knownTypes.add(k);
    for (const k of newParts) knownParts.add(k);
    for (const k of newKeyChunks.keys()) knownKeyChunks.add(k);
    for (const c of newChunks) knownChunks.add(c.hash);
    return id;
  }

  /**
   * A version with its model, read (and unpacked) on first use of `model`: a restart serves from
   * `head` and the stored resources, and reads the model after.
   */
  get(id: number): StoredVersion | undefined {
    const row = this.db.prepare(`SELECT ${VERSION_COLUMNS}, head_json FROM config_versions WHERE id = ?`).get(id) as
      (VersionRow & { head_json: string | null }) | undefined;
    if (!row) return undefined;
    let model: Model | undefined;
    const read = () => {
      const text = this.db.prepare('SELECT model_json FROM config_versions WHERE id = ?').pluck().get(id) as string;
      return (model ??= unpackModel(text, (h) => this.chunks(h)));
    };
    const head = row.head_json === null ? undefined : unpackHead(row.head_json);
    const record = { ...toRecord(row) } as StoredVersion;
    Object.defineProperty(record, 'model', { enumerable: true, get: read });
    Object.defineProperty(record, 'head', { enumerable: true, get: () => head ?? read() });
    return record;
  }

  private chunks(hashes: string[]): Map<string, string> {
    const rows = this.db
      .prepare('SELECT hash, json FROM model_chunks WHERE hash IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(hashes)) as { hash: string; json: string }[];
    return new Map(rows.map((r) => [r.hash, r.json]));
  }

  /** The newest version with this model hash (shared decisions name versions by content, ids are per replica). */
  idOfModel(modelHash: string): number | undefined {
    const row = this.db.prepare('SELECT MAX(id) AS id FROM config_versions WHERE model_hash = ?').get(modelHash) as {
      id: number | null;
    };
    return row.id ?? undefined;
  }

  latest(): StoredVersion | undefined {
    const row = this.db.prepare('SELECT MAX(id) AS id FROM config_versions').get() as { id: number | null };
    return row.id === null ? undefined : this.get(row.id);
  }

  list(limit = 50): VersionRecord[] {
    const rows = this.db
      .prepare(`SELECT ${VERSION_COLUMNS} FROM config_versions ORDER BY id DESC LIMIT ?`)
      .all(limit) as VersionRow[];
    return rows.map(toRecord);
  }

  /** Per group, the keys of what a version serves (`secret:<name>` for secrets), whatever its manifest's form. */
  manifest(versionId: number): Manifest | undefined {
    const m = this.servedManifest(versionId);
    if (!m?.typed) return m?.flat;
    const out: Manifest = {};
    for (const [group, g] of Object.entries(m.typed))
      out[group] = [...g.types.flatMap((t) => t.keys), ...g.secrets.map((s) => SECRET_PREFIX + s)];
    return out;
  }

  /**
   * A version's manifest as stored: typed (per group, each type with its version and its keys in
   * name order) or, for a version stored before manifests were typed, flat.
   */
  servedManifest(versionId: number): ServedManifest | undefined {
    const row = this.db.prepare('SELECT manifest_json FROM version_manifests WHERE version_id = ?').get(versionId) as
      { manifest_json: string } | undefined;
    if (!row) return undefined;
    const parsed = JSON.parse(row.manifest_json) as Manifest | TypedManifestJson;
    if (!('typed' in parsed && parsed.typed === 1)) return { flat: parsed as Manifest };
    const typed = parsed as TypedManifestJson;
    const wanted = [...new Set(Object.values(typed.groups).flatMap((g) => g.types))];
    const rows = (
      this.db
        .prepare('SELECT type_key, keys_json FROM type_manifests WHERE type_key IN (SELECT value FROM json_each(?))')
        .all(JSON.stringify(wanted)) as { type_key: string; keys_json: string }[]
    ).map((r) => [r.type_key, JSON.parse(r.keys_json) as TypeKeysJson] as const);
    if (rows.length !== wanted.length) return undefined;
    const chunkHashes = [...new Set(rows.flatMap(([, k]) => (Array.isArray(k) ? [] : k.chunks)))];
    const chunks = new Map(
      (
        this.db
          .prepare('SELECT hash, keys_json FROM key_chunks WHERE hash IN (SELECT value FROM json_each(?))')
          .all(JSON.stringify(chunkHashes)) as { hash: string; keys_json: string }[]
      ).map((r) => [r.hash, JSON.parse(r.keys_json) as string[]]),
    );
    if (chunks.size !== chunkHashes.length) return undefined;
    const lists = new Map(
      rows.map(([k, keys]) => [k, Array.isArray(keys) ? keys : keys.chunks.flatMap((h) => chunks.get(h)!)]),
    );
    const groups: TypedManifest = {};
    for (const [group, g] of Object.entries(typed.groups))
      groups[group] = {
        types: g.types.map((k) => ({ ...typeOfKey(k), keys: lists.get(k)! })),
        secrets: g.secrets,
        ...(g.failover && { failover: g.failover }),
      };
    return { typed: groups };
  }

  /** The stored resources of these keys (secret entries skipped); undefined if any is missing. */
  resources(keys: Iterable<string>): Map<string, LoadedResource> | undefined {
    const wanted = new Set<string>();
    for (const k of keys) if (!k.startsWith(SECRET_PREFIX)) wanted.add(k);
    const out = new Map<string, LoadedResource>();
    const rows = this.db
      .prepare(
        `SELECT key, kind, name, any, parts, rest FROM encoded_resources
         WHERE key IN (SELECT value FROM json_each(?))`,
      )
      .all(JSON.stringify([...wanted])) as (Omit<LoadedResource, 'stored'> & {
      any: Buffer;
      parts: string | null;
      rest: Buffer | null;
    })[];
    const parted = rows.flatMap((r) =>
      r.parts === null ? [] : [{ row: r, ...(JSON.parse(r.parts) as { field: string; keys: string[] }) }],
    );
    const parts = parted.length ? this.parts(parted.flatMap((p) => p.keys)) : new Map<string, never>();
    for (const { key, kind, name, any } of rows) out.set(key, { key, kind, name, stored: any });
    for (const p of parted) {
      const entries = p.keys.map((k) => parts.get(k));
      if (entries.some((e) => !e)) return undefined;
      out.get(p.row.key)!.stored = {
        field: p.field,
        rest: p.row.rest ?? Buffer.alloc(0),
        entries: entries as ResourceParts['entries'],
      };
    }
    return out.size === wanted.size ? out : undefined;
  }

  /** Stored parts by key. */
  private parts(keys: string[]): Map<string, ResourceParts['entries'][number]> {
    const rows = this.db
      .prepare('SELECT key, framed FROM resource_parts WHERE key IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify([...new Set(keys)])) as ResourceParts['entries'];
    return new Map(rows.map((r) => [r.key, r]));
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
