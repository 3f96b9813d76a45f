/**
 * Applying config: a tree from the directory (compiled into a candidate, recorded as a version in
 * the store, handed to a staged rollout if its policy asks, then served), renewed secret files
 * (only the Secret input changes), and a restart (the newest stored version served before the
 * directory is read). An invalid tree is recorded as rejected and never reaches a proxy.
 */
import type { ConnectedFleet } from '../model/fleet.ts';
import type { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { checkTree, type TreeCheck } from '../compile/check-tree.ts';
import { nextDeadline, type Window } from '../model/expiry.ts';
import type { PipelineCaches } from '../compile/caches.ts';
import type { EnvoyChecker } from '../compile/envoy-check.ts';
import { originIn, originKey, type Model, type SecretMaterial } from '../model/types.ts';
import { servedRollout } from '../rollout/active.ts';
import { formatDiagnostic, hasErrors, nothingServedReason, type Diagnostic } from '../shared/diagnostics.ts';
import { buildSecrets } from '../snapshot/build.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import { makeRevision, revisionGroups } from '../snapshot/revision.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { loadSecrets } from '../source/secrets.ts';
import type { Stores } from '../store/database.ts';
import type { OperatorDecisions } from './operator-decisions.ts';
import { versionManifest, type RevisionLoader } from './revision-loader.ts';
import type { RollbackSuppression } from './rollback-suppression.ts';
import type { ServedState } from './served-state.ts';

/** How soon an override that fell due is tried again when the tree could not be applied. */
const DUE_RETRY_MS = 30_000;

export type ApplyOutcome =
  | { status: 'applied'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'unchanged'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'rejected'; diagnostics: Diagnostic[] }
  /** The tree could not be read completely for a reason that passes (read-tree.ts): read it again soon. */
  | { status: 'unreadable'; reason: string; diagnostics: Diagnostic[] };

export interface ApplyParts {
  readonly stores: Pick<Stores, 'revisions' | 'rejections' | 'overrideWindows' | 'audit'>;
  readonly served: ServedState;
  readonly decisions: OperatorDecisions;
  readonly suppression: RollbackSuppression;
  readonly revisions: RevisionLoader;
  readonly caches: PipelineCaches;
  readonly cache: SnapshotCache;
  readonly log: Logger;
  /** 'applied' (ms), 'rejected' (diagnostics), 'unreadable' (reason): for metrics. */
  readonly events: EventEmitter;
  /** The config directory Secret file paths are relative to. */
  readonly configDir: string;
  /** Optional: real Envoy judges every tree before it is applied. */
  readonly envoy?: EnvoyChecker;
  /** The gRPC releases connected per node group (settings they would ignore are warned). */
  readonly fleet?: () => ConnectedFleet;
}

export class TreeApply {
  private lastRejectedTree?: string;
  /**
   * Whether the newest read of the directory (or of the served secret files) was refused. A
   * refusal stops being current once the directory holds a valid tree again, even one identical to
   * what is served (nothing is applied then, so no newer version would say so).
   */
  private refusedNow = false;

  /** The newest refusal is about what is on disk now. */
  get refusalIsCurrent(): boolean {
    return this.refusedNow;
  }

  /** The overrides served now (by id), and the soonest of their deadlines. */
  private overrides: { ids: ReadonlySet<string>; next?: number } = { ids: new Set() };

  /**
   * When the next override falls due (ms since the epoch): the tree is to be applied again then.
   * None while a rollback is served: it serves the version the operator chose until the directory
   * changes.
   */
  get nextDeadline(): number | undefined {
    return this.p.suppression.tree ? undefined : this.overrides.next;
  }

  constructor(private readonly p: ApplyParts) {}

  async apply(dir: string): Promise<ApplyOutcome> {
    const { stores, served: state, decisions, suppression, events, log } = this.p;
    const started = performance.now();
    const cpuAtStart = process.cpuUsage();
    const served = state.revision;
    const now = Date.now();
    // An override fell due: the same tree makes a new version. Not over a rollback, which serves
    // the version the operator chose until the directory changes.
    const due = this.overrides.next !== undefined && now >= this.overrides.next && !suppression.tree;
    // Should the tree be refused or unreadable now, the lapse is tried again a little later.
    if (due) this.overrides = { ...this.overrides, next: now + DUE_RETRY_MS };
    const check = await checkTree(dir, this.p.caches, {
      // Nothing is parsed when the tree is byte-for-byte the one being served (e.g. at every start).
      unlessTreeHash: due ? undefined : [served?.treeHash, suppression.tree],
      previous: served && new Map([...served.groups].map(([name, g]) => [name, g.snapshot])),
      against: this.p.cache.current?.groups,
      envoy: this.p.envoy,
      fleet: this.p.fleet,
      provenance: true,
      clock: { now, started: stores.overrideWindows.started() },
    });
    if (check.unchanged && served) {
      this.refusedNow = false;
      return { status: 'unchanged', versionId: served.id, diagnostics: [] };
    }
    if (check.incomplete) {
      // Neither a verdict on the tree nor a rejection to record: what is served stays, the tree is read again.
      events.emit('unreadable', check.incomplete);
      return { status: 'unreadable', reason: check.incomplete, diagnostics: check.diagnostics };
    }
    const { model, config, secretResources, modelHash: hash } = check;
    if (!model || !config || !secretResources || !hash) return this.reject(check.treeHash, dir, check.diagnostics);
    this.lastRejectedTree = undefined;
    this.refusedNow = false;
    const lapsed = this.keepWindows(check.expiry);
    if (served && hash === suppression.model) {
      // The push a rollback reverted (reached here after the rollback, from another replica).
      suppression.set(check.treeHash, hash);
      return { status: 'unchanged', versionId: served.id, diagnostics: check.diagnostics };
    }
    // The directory moved on since a rollback: it is the source again.
    if (suppression.tree || suppression.model) suppression.set(undefined, undefined);
    if (served && served.modelHash === hash)
      return { status: 'unchanged', versionId: served.id, diagnostics: check.diagnostics };
    const appliedAt = new Date();
    const groups = revisionGroups(config.groups);
    const from = check.provenance;
    const id = stores.revisions.insert(
      {
        treeHash: check.treeHash,
        modelHash: hash,
        sourceKind: from ? 'git' : 'directory',
        source: dir,
        model,
        warnings: check.diagnostics,
        commitSha: from?.commit,
        author: from ? `${from.author} <${from.email}>` : undefined,
        subject: from?.subject,
      },
      versionManifest(groups),
      appliedAt,
    );
    const revision = makeRevision({
      id,
      modelHash: hash,
      treeHash: check.treeHash,
      appliedAt: appliedAt.toISOString(),
      commit: from?.commit,
      subject: from?.subject,
      model,
      groups,
    });
    const rollout = decisions.rolloutFor(revision, served, appliedAt);
    // What the change cost before any proxy was sent anything, and what handing it to every stream took.
    const cpu = process.cpuUsage(cpuAtStart);
    const publishing = performance.now();
    state.update({
      revision,
      secrets: secretResources,
      material: check.secrets ?? new Map<string, SecretMaterial>(),
      rollout: servedRollout(rollout),
    });
    for (const w of lapsed)
      stores.audit.append('fleetxds', 'override-expired', {
        what: w.what,
        deadline: new Date(w.deadline).toISOString(),
        versionId: id,
      });
    if (lapsed.length)
      log.info({ versionId: id, expired: lapsed.map((w) => w.what) }, 'overrides expired; served without them');
    const ms = performance.now() - started;
    log.info(
      {
        versionId: id,
        modelHash: hash.slice(0, 12),
        ms: Math.round(ms),
        cpuMs: Math.round((cpu.user + cpu.system) / 1000),
        publishMs: Math.round(performance.now() - publishing),
        warnings: check.diagnostics.length,
      },
      'applied config version',
    );
    events.emit('applied', ms);
    return { status: 'applied', versionId: id, diagnostics: check.diagnostics };
  }

  /**
   * Records when the tree's overrides started (new ones now) and which are served; returns those
   * served until now that lapsed (the new version removes them).
   */
  private keepWindows(expiry: TreeCheck['expiry']): readonly Window[] {
    const active = expiry?.active ?? [];
    const expired = expiry?.expired ?? [];
    this.p.stores.overrideWindows.keep([
      ...active.map((w) => ({ ...w, expired: false })),
      ...expired.map((w) => ({ ...w, expired: true })),
    ]);
    const before = this.overrides.ids;
    this.overrides = { ids: new Set(active.map((w) => w.id)), next: nextDeadline(active) };
    return expired.filter((w) => before.has(w.id));
  }

  private reject(treeHash: string, source: string, diagnostics: Diagnostic[]): ApplyOutcome {
    this.refusedNow = true;
    if (this.lastRejectedTree !== treeHash) {
      this.p.stores.rejections.record(treeHash, source, diagnostics);
      this.lastRejectedTree = treeHash;
    }
    const problems = diagnostics.map(formatDiagnostic);
    if (this.p.served.revision)
      this.p.log.warn({ dir: source, problems }, 'config tree rejected; still serving the last good version');
    else this.p.log.error({ dir: source, problems }, nothingServedReason({ rejection: { diagnostics } }));
    this.p.events.emit('rejected', diagnostics);
    return { status: 'rejected', diagnostics };
  }

  /**
   * Restart: serves the newest stored version before the directory has been read. With a stored
   * manifest nothing is translated or encoded: the stored bytes are served as they are.
   */
  async restore(): Promise<boolean> {
    const { stores, served: state, decisions, suppression, log } = this.p;
    const record = stores.revisions.latest();
    if (!record) return false;
    // TLS material is never in the store: read it again from its files.
    const { secrets, material } = await this.readSecrets(
      record.head,
      'secrets of the stored version cannot be loaded; they are not served',
    );
    const revision = this.p.revisions.fromRecord(record, material);
    if (!revision) return false;
    // Its overrides' deadlines: one past already makes the first read of the directory a new version.
    const served = stores.overrideWindows.list().filter((w) => !w.expired);
    this.overrides = { ids: new Set(served.map((w) => w.id)), next: nextDeadline(served) };
    suppression.restore();
    decisions.restoreRollout(revision);
    state.update({
      revision,
      pins: decisions.restorePins(),
      secrets: secrets ?? new Map(),
      material,
      rollout: servedRollout(decisions.active),
    });
    log.info(
      { versionId: revision.id, modelHash: revision.modelHash.slice(0, 12) },
      'serving last good version from the store',
    );
    return true;
  }

  /**
   * Certificate rotation: re-reads the served model's secret files. A valid change replaces the
   * secret input only (other types keep their snapshots, so only SDS is pushed, and only to nodes
   * that use the secret); a broken renewal keeps the last good material.
   */
  async reloadSecrets(): Promise<'rotated' | 'unchanged' | 'rejected'> {
    const { stores, served: state, log } = this.p;
    const served = state.revision;
    if (!served) return 'unchanged';
    const model = served.model;
    const loaded = await this.loadSecretFiles(model);
    const built = hasErrors(loaded.diagnostics) ? undefined : buildSecrets(model, loaded.materials, this.p.caches);
    if (!built?.secrets) {
      const diagnostics = [...loaded.diagnostics, ...(built?.diagnostics ?? [])];
      log.error(
        { problems: diagnostics.map(formatDiagnostic) },
        'renewed secret files rejected; still serving the last good secrets',
      );
      stores.rejections.record(served.treeHash, 'secret files', diagnostics);
      this.refusedNow = true;
      this.p.events.emit('rejected', diagnostics);
      return 'rejected';
    }
    const changed = [...loaded.materials.values()].filter(
      (m) => state.materialOf(m.name)?.fingerprint !== m.fingerprint,
    );
    this.refusedNow = false;
    if (!changed.length) return 'unchanged';
    state.update({ secrets: built.secrets, material: loaded.materials });
    const rotated = changed.map((m) => ({
      name: m.name,
      fingerprint: m.fingerprint.slice(0, 16),
      notAfter: m.notAfter,
    }));
    log.info({ secrets: rotated }, 'rotated secrets');
    return 'rotated';
  }

  /** The TLS material of a model's Secret documents, read from files relative to the config folder. */
  private loadSecretFiles(model: Model): ReturnType<typeof loadSecrets> {
    return loadSecrets(model.secrets, resolve(this.p.configDir), (name) => originIn(model, originKey('Secret', name)));
  }

  /**
   * Restart: reads and builds the model's secrets. Secrets whose files fail are left out (and
   * logged); the others are served, as they were before the restart.
   */
  private async readSecrets(
    model: Model,
    failure: string,
  ): Promise<{ secrets?: Map<string, EncodedResource>; material: ReadonlyMap<string, SecretMaterial> }> {
    const loaded = await this.loadSecretFiles(model);
    if (hasErrors(loaded.diagnostics))
      this.p.log.error({ problems: loaded.diagnostics.map(formatDiagnostic) }, failure);
    const built = buildSecrets(model, loaded.materials, this.p.caches);
    if (!built.secrets) {
      this.p.log.error({ problems: built.diagnostics.map(formatDiagnostic) }, failure);
      return { material: new Map() };
    }
    return { secrets: built.secrets, material: loaded.materials };
  }
}
