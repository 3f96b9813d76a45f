/**
 * Applies config trees all-or-nothing: read -> validate -> build (encode + check every Envoy
 * resource) -> record in SQLite -> publish to the snapshot cache. An invalid tree is recorded as
 * rejected and never published; the last good version keeps being served. Applies are serialized.
 */
import type { Logger } from 'pino';
import { EventEmitter } from 'node:events';
import { checkTree } from './check-tree.ts';
import type { EnvoyChecker } from './envoy-check.ts';
import type { Store } from '../model/store.ts';
import type { Model } from '../model/types.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { formatDiagnostic, hasErrors, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import { buildConfig, type BuiltConfig } from '../snapshot/build.ts';
import { ResourceEncoder, type EncodedResource } from '../snapshot/encoder.ts';
import { makeGroupSnapshot, makeTypeSnapshot, type GroupSnapshot } from '../snapshot/group-snapshot.ts';
import { loadSecrets, secretResource, type SecretMaterial } from '../source/secrets.ts';
import { originKey } from '../model/types.ts';
import { resolve } from 'node:path';
import { revisionOf } from '../source/git-info.ts';
import { NodeGroupResolver } from '../model/node-groups.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';

export type ApplyOutcome =
  | { status: 'applied'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'unchanged'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'rejected'; diagnostics: Diagnostic[] };

const docHashes = new WeakMap<object, string>();

/** Hash of a model: over per-document hashes, memoized by document identity (unchanged files cost nothing). */
export function modelHash(model: Model): string {
  const h = (doc: object) => {
    let v = docHashes.get(doc);
    if (!v) docHashes.set(doc, (v = sha256Hex(canonicalJson(doc))));
    return v;
  };
  const parts: string[] = [];
  for (const list of [
    model.services,
    model.listeners,
    model.virtualHosts,
    model.grpcServices,
    model.secrets,
    model.nodeGroups,
    model.guards ?? [],
  ])
    for (const d of list) parts.push(h(d));
  parts.push(sha256Hex(canonicalJson(model.origins)));
  return sha256Hex(parts.join('\n'));
}

const SECRET_PREFIX = 'secret:';

export class RollbackError extends Error {}

export class ConfigPipeline {
  readonly encoder = new ResourceEncoder();
  /** 'applied' (ms), 'rejected' (diagnostics): for metrics. */
  readonly events = new EventEmitter();
  private queue: Promise<unknown> = Promise.resolve();
  private lastRejectedTree?: string;

  /** The model being served and its TLS material (material only in memory, never stored). */
  private model?: Model;
  private secrets = new Map<string, SecretMaterial>();

  constructor(
    private readonly store: Store,
    private readonly cache: SnapshotCache,
    private readonly log: Logger,
    /** The config directory Secret file paths are relative to. */
    private readonly configDir: string,
    /** Optional: real Envoy judges every tree before it is applied. */
    private readonly envoy?: EnvoyChecker,
  ) {}

  get secretFiles(): string[] {
    return [...this.secrets.values()].flatMap((m) => m.files);
  }

  get servedSecrets(): { name: string; fingerprint: string; notAfter?: string; subject?: string }[] {
    return [...this.secrets.values()].map(({ name, fingerprint, notAfter, subject }) => ({
      name,
      fingerprint,
      notAfter,
      subject,
    }));
  }

  /** Keys already in the store's encoded_resources (loaded lazily). */
  private storedKeys?: Set<string>;

  /**
   * Serves the newest stored version, before the directory has been read. With a stored manifest
   * nothing is translated or encoded: the stored bytes are served as they are.
   */
  async loadLatestFromStore(): Promise<boolean> {
    const latest = this.store.latestVersion();
    if (!latest) return false;
    // TLS material is never in the store: read it again from its files.
    const model = latest.model;
    const loaded = await loadSecrets(
      model.secrets,
      resolve(this.configDir),
      (name) => model.origins[originKey('Secret', name)],
    );
    if (hasErrors(loaded.diagnostics))
      this.log.error(
        { problems: loaded.diagnostics.map(formatDiagnostic) },
        'secrets of the stored version cannot be loaded; they are not served',
      );
    this.model = model;
    this.secrets = loaded.materials;
    const groups = this.groupsOfVersion(latest.id);
    if (groups) {
      this.publish(latest.id, latest.modelHash, latest.treeHash, latest.appliedAt, {
        groups,
        resolver: NodeGroupResolver.forModel(latest.model),
      });
      this.log.info(
        { versionId: latest.id, modelHash: latest.modelHash.slice(0, 12) },
        'serving last good version from the store',
      );
      return true;
    }
    const built = buildConfig(latest.model, this.encoder, undefined, this.secrets);
    if (!built.config) {
      // Only possible if this build of fleetxds rejects what an older one accepted.
      this.log.error(
        { versionId: latest.id, problems: built.diagnostics.map(formatDiagnostic) },
        'stored version no longer builds; waiting for the directory',
      );
      return false;
    }
    this.publish(latest.id, latest.modelHash, latest.treeHash, latest.appliedAt, built.config);
    this.log.info(
      { versionId: latest.id, modelHash: latest.modelHash.slice(0, 12) },
      'serving last good version from the store',
    );
    return true;
  }

  /** A stored version's per-group snapshots, from its manifest (secrets from the current material). */
  private groupsOfVersion(versionId: number): Map<string, GroupSnapshot> | undefined {
    const stored = this.store.loadManifest(versionId);
    if (!stored) return undefined;
    const groups = new Map<string, GroupSnapshot>();
    for (const [group, keys] of Object.entries(stored.manifest)) {
      groups.set(
        group,
        makeGroupSnapshot(
          group,
          keys.flatMap((k) => {
            if (k.startsWith(SECRET_PREFIX)) {
              const m = this.secrets.get(k.slice(SECRET_PREFIX.length));
              return m ? [this.encoder.encode('secret', m.name, secretResource(m))] : [];
            }
            const r = stored.resources.get(k)!;
            return [this.encoder.restore(r.kind, r.name, r.key, r.json, r.any)];
          }),
        ),
      );
    }
    return groups;
  }

  /** What changed between two versions, per node group: resources added, changed, removed. */
  diff(
    fromId: number,
    toId: number,
  ): Record<string, { added: string[]; changed: string[]; removed: string[] }> | undefined {
    const a = this.store.manifestOf(fromId);
    const b = this.store.manifestOf(toId);
    if (!a || !b) return undefined;
    const names = this.store.resourceNames(
      new Set([...Object.values(a).flat(), ...Object.values(b).flat()].filter((k) => !k.startsWith(SECRET_PREFIX))),
    );
    const label = (k: string) =>
      k.startsWith(SECRET_PREFIX)
        ? `secret/${k.slice(SECRET_PREFIX.length)}`
        : `${names.get(k)?.kind}/${names.get(k)?.name}`;
    const out: Record<string, { added: string[]; changed: string[]; removed: string[] }> = {};
    for (const group of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const before = new Map((a[group] ?? []).map((k) => [label(k), k]));
      const after = new Map((b[group] ?? []).map((k) => [label(k), k]));
      const d = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
      for (const [n, k] of after)
        if (!before.has(n)) d.added.push(n);
        else if (before.get(n) !== k) d.changed.push(n);
      for (const n of before.keys()) if (!after.has(n)) d.removed.push(n);
      if (d.added.length || d.changed.length || d.removed.length)
        out[group] = { added: d.added.sort(), changed: d.changed.sort(), removed: d.removed.sort() };
    }
    return out;
  }

  /**
   * Serves an earlier version again, recorded as a new version (source "rollback"). The directory
   * is not re-applied until its content changes (a new push), so the rollback sticks.
   */
  rollback(toId: number, actor: string): Promise<ApplyOutcome> {
    const run = this.queue.then(async (): Promise<ApplyOutcome> => {
      const target = this.store.getVersion(toId);
      const manifest = this.store.manifestOf(toId);
      const groups = target && manifest ? this.groupsOfVersion(toId) : undefined;
      if (!target || !manifest || !groups)
        throw new RollbackError(`version ${toId} does not exist or has no stored resources`);
      const cur = this.cache.current;
      if (cur) this.suppressedTree = cur.treeHash;
      const versionId = this.store.db.transaction(() => {
        const id = this.store.insertVersionWithResources(
          {
            treeHash: target.treeHash,
            modelHash: target.modelHash,
            sourceKind: 'rollback',
            source: `rollback to #${toId}`,
            commitSha: target.commitSha ?? undefined,
            author: actor,
            subject: `rollback to #${toId}${target.subject ? `: ${target.subject}` : ''}`,
            model: target.model,
            warnings: [],
          },
          [],
          manifest,
        );
        this.store.audit(actor, 'rollback', JSON.stringify({ from: cur?.versionId ?? null, to: toId, as: id }));
        return id;
      })();
      this.model = target.model;
      this.publish(versionId, target.modelHash, target.treeHash, new Date().toISOString(), {
        groups,
        resolver: NodeGroupResolver.forModel(target.model),
      });
      this.log.warn({ versionId, to: toId, actor }, 'rolled back');
      return { status: 'applied', versionId, diagnostics: [] };
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Re-publishes the current version so pin changes take effect. */
  republish(): Promise<void> {
    const run = this.queue.then(() => {
      const cur = this.cache.current;
      if (cur && this.unpinned) this.publish(cur.versionId, cur.modelHash, cur.treeHash, cur.appliedAt, this.unpinned);
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  applyDirectory(dir: string): Promise<ApplyOutcome> {
    const run = this.queue.then(() => this.applyNow(dir));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async applyNow(dir: string): Promise<ApplyOutcome> {
    const started = performance.now();
    const current0 = this.cache.current;
    // Nothing is parsed when the tree is byte-for-byte the one being served (e.g. at every start).
    const check = await checkTree(dir, this.encoder, {
      unlessTreeHash: [current0?.treeHash, this.suppressedTree],
      previous: this.unpinned?.groups,
      against: this.cache.current?.groups,
      envoy: this.envoy,
    });
    if (check.unchanged && current0) return { status: 'unchanged', versionId: current0.versionId, diagnostics: [] };
    this.suppressedTree = undefined; // the directory moved on since a rollback: it is the source again
    if (!check.model || !check.config) {
      if (this.lastRejectedTree !== check.treeHash) {
        this.store.recordRejection(check.treeHash, dir, check.diagnostics);
        this.lastRejectedTree = check.treeHash;
      }
      this.log.warn(
        { dir, problems: check.diagnostics.map(formatDiagnostic) },
        'config tree rejected; still serving the last good version',
      );
      this.events.emit('rejected', check.diagnostics);
      return { status: 'rejected', diagnostics: check.diagnostics };
    }
    this.lastRejectedTree = undefined;
    const hash = modelHash(check.model);
    const current = this.cache.current;
    if (current && current.modelHash === hash) {
      return { status: 'unchanged', versionId: current.versionId, diagnostics: check.diagnostics };
    }
    const appliedAt = new Date();
    this.storedKeys ??= this.store.storedResourceKeys();
    const manifest: Record<string, string[]> = {};
    const fresh = new Map<string, EncodedResource>();
    for (const [group, g] of check.config.groups) {
      manifest[group] = [];
      for (const t of Object.values(g.types)) {
        for (const r of t.resources.values()) {
          // Secrets hold private keys: the store keeps only their names (material is re-read from files).
          if (r.kind === 'secret') {
            manifest[group].push(SECRET_PREFIX + r.name);
            continue;
          }
          manifest[group].push(r.key);
          if (!this.storedKeys.has(r.key)) fresh.set(r.key, r);
        }
      }
    }
    const rev = await revisionOf(dir);
    const versionId = this.store.insertVersionWithResources(
      {
        treeHash: check.treeHash,
        modelHash: hash,
        sourceKind: rev ? 'git' : 'directory',
        source: dir,
        model: check.model,
        warnings: check.diagnostics,
        commitSha: rev?.commit,
        author: rev ? `${rev.author} <${rev.email}>` : undefined,
        subject: rev?.subject,
      },
      [...fresh.values()],
      manifest,
      appliedAt,
    );
    for (const k of fresh.keys()) this.storedKeys.add(k);
    this.model = check.model;
    this.secrets = check.secrets ?? new Map();
    this.publish(versionId, hash, check.treeHash, appliedAt.toISOString(), check.config);
    this.log.info(
      {
        versionId,
        modelHash: hash.slice(0, 12),
        ms: Math.round(performance.now() - started),
        warnings: check.diagnostics.length,
      },
      'applied config version',
    );
    this.events.emit('applied', performance.now() - started);
    return { status: 'applied', versionId, diagnostics: check.diagnostics };
  }

  /**
   * Certificate rotation: re-reads the served model's secret files. A valid change publishes new
   * Secret resources only (other types keep their snapshots, so only SDS is pushed, and only to
   * nodes that use the secret); a broken renewal keeps the last good material.
   */
  reloadSecrets(): Promise<'rotated' | 'unchanged' | 'rejected'> {
    const run = this.queue.then(() => this.reloadSecretsNow());
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async reloadSecretsNow(): Promise<'rotated' | 'unchanged' | 'rejected'> {
    const cur = this.cache.current;
    const model = this.model;
    if (!cur || !model) return 'unchanged';
    const loaded = await loadSecrets(
      model.secrets,
      resolve(this.configDir),
      (name) => model.origins[originKey('Secret', name)],
    );
    if (hasErrors(loaded.diagnostics)) {
      this.log.error(
        { problems: loaded.diagnostics.map(formatDiagnostic) },
        'renewed secret files rejected; still serving the last good secrets',
      );
      this.store.recordRejection(cur.treeHash, 'secret files', loaded.diagnostics);
      this.events.emit('rejected', loaded.diagnostics);
      return 'rejected';
    }
    const changed = [...loaded.materials.values()].filter(
      (m) => this.secrets.get(m.name)?.fingerprint !== m.fingerprint,
    );
    if (!changed.length) return 'unchanged';
    this.secrets = loaded.materials;
    const groups = new Map<string, GroupSnapshot>();
    for (const [name, g] of this.unpinned?.groups ?? cur.groups) {
      const secrets = [...g.types.secret.resources.keys()].flatMap((n) => {
        const m = this.secrets.get(n);
        return m ? [this.encoder.encode('secret', n, secretResource(m))] : [];
      });
      groups.set(name, { group: name, types: { ...g.types, secret: makeTypeSnapshot('secret', secrets) } });
    }
    this.publish(cur.versionId, cur.modelHash, cur.treeHash, cur.appliedAt, { groups, resolver: cur.resolver });
    this.log.info(
      {
        secrets: changed.map((m) => ({ name: m.name, fingerprint: m.fingerprint.slice(0, 16), notAfter: m.notAfter })),
      },
      'rotated secrets',
    );
    return 'rotated';
  }

  /** What the newest version serves per group before pins are applied. */
  private unpinned?: BuiltConfig;
  /** Tree hash of the directory content a rollback replaced: not re-applied until it changes. */
  private suppressedTree?: string;

  /** Pinned groups keep the snapshots of their pinned version. */
  private publish(versionId: number, hash: string, treeHash: string, appliedAt: string, config: BuiltConfig): void {
    this.unpinned = config;
    const groups = new Map(config.groups);
    for (const pin of this.store.listPins()) {
      const pinned = this.groupsOfVersion(pin.versionId)?.get(pin.group);
      if (pinned) groups.set(pin.group, pinned);
    }
    const commit = this.store.commitOf(versionId);
    const controlPlane = `fleetxds version ${versionId}${commit ? ` commit ${commit}` : ''}`;
    this.cache.publish({
      versionId,
      modelHash: hash,
      treeHash,
      appliedAt,
      controlPlane,
      groups,
      resolver: config.resolver,
    });
  }
}
