/**
 * Applies config trees all-or-nothing and keeps what is served a function of explicit inputs.
 *
 * An apply reads, validates and builds a tree (every Envoy resource encoded and checked), records
 * it in the revision store, and sets it as the served revision; an invalid tree is recorded as
 * rejected and never reaches a proxy. Rollbacks, pins and certificate rotations change one input
 * each. After every change the one `update` step reconciles the inputs into a published config
 * (src/snapshot/reconcile.ts); nothing else publishes. Changes are serialized in one queue.
 */
import { EventEmitter } from 'node:events';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { SecretMaterial } from '../model/types.ts';
import { originKey, type Model } from '../model/types.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import { formatDiagnostic, hasErrors, type Diagnostic } from '../shared/diagnostics.ts';
import { buildConfig, buildSecrets } from '../snapshot/build.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import { makeGroupSnapshot } from '../snapshot/group-snapshot.ts';
import { reconcile, type ServedInputs, type ServedRollout } from '../snapshot/reconcile.ts';
import { compilePlan, type RolloutPlan } from '../rollout/plan.ts';
import {
  isActive,
  RolloutCommandError,
  servesNew,
  startRollout,
  step,
  type RolloutEvent,
  type RolloutState,
  type StageRules,
} from '../rollout/state.ts';
import { makeRevision, revisionGroups, type Revision, type RevisionGroup } from '../snapshot/revision.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { revisionOf } from '../source/git-info.ts';
import { loadSecrets } from '../source/secrets.ts';
import type { Stores } from '../store/database.ts';
import { SECRET_PREFIX, type Manifest, type StoredResource, type VersionRecord } from '../store/revisions.ts';
import { PipelineCaches } from './caches.ts';
import { checkTree } from './check-tree.ts';
import type { EnvoyChecker } from './envoy-check.ts';

export type ApplyOutcome =
  | { status: 'applied'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'unchanged'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'rejected'; diagnostics: Diagnostic[] };

export interface ServedSecret {
  name: string;
  fingerprint: string;
  notAfter?: string;
  subject?: string;
}

/** Revisions restored from the store for pins and rollbacks, kept for reuse (a handful at most). */
const MAX_CACHED_REVISIONS = 8;

export class ConfigPipeline {
  readonly caches = new PipelineCaches();
  /** 'applied' (ms), 'rejected' (diagnostics): for metrics. */
  readonly events = new EventEmitter();
  private queue: Promise<unknown> = Promise.resolve();
  /** The inputs of what is served; undefined until a version exists. */
  private inputs?: ServedInputs;
  /** TLS material of the served model's secrets (in memory only, never stored). */
  private material = new Map<string, SecretMaterial>();
  private readonly restored = new Map<number, Revision>();
  private lastRejectedTree?: string;
  /** The rollout under way (progressing or halted); its serving part is an input of reconcile. */
  private active?: ActiveRollout;
  /** Tree hash of the directory content a rollback replaced: not re-applied until it changes. */
  private suppressedTree?: string;

  constructor(
    private readonly stores: Pick<Stores, 'revisions' | 'pins' | 'audit' | 'rejections' | 'rollouts' | 'atomically'>,
    private readonly cache: SnapshotCache,
    private readonly log: Logger,
    /** The config directory Secret file paths are relative to. */
    private readonly configDir: string,
    /** Optional: real Envoy judges every tree before it is applied. */
    private readonly envoy?: EnvoyChecker,
  ) {}

  get secretFiles(): string[] {
    return [...this.material.values()].flatMap((m) => m.files);
  }

  get servedSecrets(): ServedSecret[] {
    return [...this.material.values()].map(({ name, fingerprint, notAfter, subject }) => ({
      name,
      fingerprint,
      notAfter,
      subject,
    }));
  }

  /** The one publish path: replaces some inputs, reconciles, publishes. */
  private update(change: Partial<ServedInputs>): void {
    const base = this.inputs;
    const revision = change.revision ?? base?.revision;
    if (!revision) return;
    this.inputs = {
      revision,
      pins: change.pins ?? base?.pins ?? new Map(),
      secrets: change.secrets ?? base?.secrets ?? new Map(),
      rollout: 'rollout' in change ? change.rollout : base?.rollout,
    };
    this.cache.publish(reconcile(this.inputs, this.cache.current));
  }

  /** The rollout under way, if any (its state, its plan, the revision it started from). */
  get rollout(): ActiveRollout | undefined {
    return this.active;
  }

  private servedRollout(a: ActiveRollout | undefined): ServedRollout | undefined {
    if (!a || !isActive(a.state)) return undefined;
    const { plan, state } = a;
    return {
      from: a.from,
      stageOf: (node, group) => {
        const i = plan.stageOf(node, group);
        return { stage: plan.names[i] ?? 'rest', servesNew: servesNew(state, i) };
      },
    };
  }

  /**
   * A new revision with a Rollout policy starts a rollout from the version the fleet is on (the
   * previous revision, or the one a superseded rollout started from). Without a policy, or when
   * nothing served changes, everyone gets the new revision at once.
   */
  private rolloutFor(revision: Revision, served: Revision | undefined, at: Date): ActiveRollout | undefined {
    const policy = revision.model.rollouts?.[0];
    const superseded = this.active && isActive(this.active.state) ? this.active : undefined;
    if (superseded) {
      const state = { ...superseded.state, status: 'aborted' as const, endedAt: at.toISOString() };
      this.stores.rollouts.save(superseded.id, state, at);
      this.stores.audit.append('fleetxds', 'rollout-superseded', { rollout: superseded.id, by: revision.id });
    }
    const from = superseded?.from ?? served;
    if (!policy || !from || !changesServed(from, revision)) return undefined;
    const state = startRollout(from.id, revision.id, at);
    const id = this.stores.rollouts.start(state, at);
    this.stores.audit.append('fleetxds', 'rollout-start', { rollout: id, from: from.id, to: revision.id });
    this.log.info({ rollout: id, from: from.id, to: revision.id, stages: policy.stages.length }, 'rollout started');
    return { id, from, plan: compilePlan(policy), state };
  }

  /**
   * Feeds the rollout's state machine (gate results, NACKs, operator commands), saves and audits
   * every transition, and serves what the new state says. An abort serves the previous version
   * again, recorded as a rollback.
   */
  rolloutEvent(event: RolloutEvent, actor = 'fleetxds'): Promise<RolloutState | undefined> {
    return this.enqueue(async () => {
      const a = this.active;
      if (!a || !isActive(a.state)) {
        if (event.type === 'gates' || event.type === 'nack') return undefined;
        throw new FleetError(ErrorCodes.NO_ROLLOUT, 'no rollout is under way');
      }
      let next: RolloutState;
      try {
        next = step(a.state, event, rulesOf(a.plan), new Date());
      } catch (err) {
        if (err instanceof RolloutCommandError) throw new FleetError(ErrorCodes.ROLLOUT_STATE, err.message);
        throw err;
      }
      if (next === a.state) return next;
      const automatic = event.type === 'gates' || event.type === 'nack';
      const what = next.status !== a.state.status ? next.status : next.stage !== a.state.stage ? 'advanced' : undefined;
      this.stores.atomically(() => {
        this.stores.rollouts.save(a.id, next);
        if (!automatic || what)
          this.stores.audit.append(actor, `rollout-${automatic ? what : event.type}`, {
            rollout: a.id,
            stage: a.plan.names[next.stage] ?? 'rest',
            ...(next.halt && what === 'halted' ? { halt: next.halt } : {}),
          });
      });
      this.active = { ...a, state: next };
      if (what)
        this.log.warn({ rollout: a.id, status: next.status, stage: a.plan.names[next.stage], actor }, 'rollout');
      if (next.status === 'aborted') {
        this.active = undefined;
        await this.rollbackNow(a.from.id, actor, 'rollout aborted');
      } else if (next.status === 'complete') {
        this.active = undefined;
        this.update({ rollout: undefined });
      } else if (servingChanged(a.state, next)) {
        this.update({ rollout: this.servedRollout(this.active) });
      }
      return next;
    });
  }

  private enqueue<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Restart: serves the newest stored version before the directory has been read. With a stored
   * manifest nothing is translated or encoded: the stored bytes are served as they are.
   */
  loadLatestFromStore(): Promise<boolean> {
    return this.enqueue(async () => {
      const latest = this.stores.revisions.latest();
      if (!latest) return false;
      // TLS material is never in the store: read it again from its files.
      const secrets = await this.readSecrets(
        latest.model,
        'secrets of the stored version cannot be loaded; they are not served',
      );
      const revision = this.restore(latest) ?? this.rebuild(latest);
      if (!revision) return false;
      this.active = this.restoreRollout(revision);
      this.update({
        revision,
        pins: this.restorePins(),
        secrets: secrets ?? new Map(),
        rollout: this.servedRollout(this.active),
      });
      this.log.info(
        { versionId: latest.id, modelHash: latest.modelHash.slice(0, 12) },
        'serving last good version from the store',
      );
      return true;
    });
  }

  applyDirectory(dir: string): Promise<ApplyOutcome> {
    return this.enqueue(() => this.applyNow(dir));
  }

  private async applyNow(dir: string): Promise<ApplyOutcome> {
    const started = performance.now();
    const served = this.inputs?.revision;
    const check = await checkTree(dir, this.caches, {
      // Nothing is parsed when the tree is byte-for-byte the one being served (e.g. at every start).
      unlessTreeHash: [served?.treeHash, this.suppressedTree],
      previous: served && new Map([...served.groups].map(([name, g]) => [name, g.snapshot])),
      against: this.cache.current?.groups,
      envoy: this.envoy,
    });
    if (check.unchanged && served) return { status: 'unchanged', versionId: served.id, diagnostics: [] };
    this.suppressedTree = undefined; // the directory moved on since a rollback: it is the source again
    const secrets = check.model && check.config && buildSecrets(check.model, check.secrets ?? new Map(), this.caches);
    if (!check.model || !check.config || !secrets?.secrets) {
      const diagnostics = [...check.diagnostics, ...(secrets?.diagnostics ?? [])];
      return this.reject(check.treeHash, dir, diagnostics);
    }
    this.lastRejectedTree = undefined;
    const hash = this.caches.modelHash(check.model);
    if (served && served.modelHash === hash)
      return { status: 'unchanged', versionId: served.id, diagnostics: check.diagnostics };
    const appliedAt = new Date();
    const groups = revisionGroups(check.config.groups);
    const { manifest, resources } = manifestOf(groups);
    const rev = await revisionOf(dir);
    const id = this.stores.revisions.insert(
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
      resources,
      manifest,
      appliedAt,
    );
    this.material = check.secrets ?? new Map();
    const revision = makeRevision({
      id,
      modelHash: hash,
      treeHash: check.treeHash,
      appliedAt: appliedAt.toISOString(),
      commit: rev?.commit,
      model: check.model,
      groups,
    });
    this.active = this.rolloutFor(revision, served, appliedAt);
    this.update({ revision, secrets: secrets.secrets, rollout: this.servedRollout(this.active) });
    const ms = performance.now() - started;
    this.log.info(
      { versionId: id, modelHash: hash.slice(0, 12), ms: Math.round(ms), warnings: check.diagnostics.length },
      'applied config version',
    );
    this.events.emit('applied', ms);
    return { status: 'applied', versionId: id, diagnostics: check.diagnostics };
  }

  private reject(treeHash: string, source: string, diagnostics: Diagnostic[]): ApplyOutcome {
    if (this.lastRejectedTree !== treeHash) {
      this.stores.rejections.record(treeHash, source, diagnostics);
      this.lastRejectedTree = treeHash;
    }
    this.log.warn(
      { dir: source, problems: diagnostics.map(formatDiagnostic) },
      'config tree rejected; still serving the last good version',
    );
    this.events.emit('rejected', diagnostics);
    return { status: 'rejected', diagnostics };
  }

  /**
   * Serves an earlier version again, recorded as a new version (source "rollback"). The directory
   * is not re-applied until its content changes (a new push), so the rollback sticks.
   */
  rollback(toId: number, actor: string): Promise<ApplyOutcome> {
    return this.enqueue(() => this.rollbackNow(toId, actor));
  }

  /** A rollback ends a rollout under way: the operator chose one version for everyone. */
  private rollbackNow(toId: number, actor: string, why = 'rollback'): ApplyOutcome {
    const target = this.revision(toId);
    const record = this.stores.revisions.get(toId)!;
    const served = this.inputs?.revision;
    const appliedAt = new Date();
    const id = this.stores.atomically(() => {
      const id = this.stores.revisions.insert(
        {
          treeHash: target.treeHash,
          modelHash: target.modelHash,
          sourceKind: 'rollback',
          source: `rollback to #${toId}`,
          commitSha: target.commit,
          author: actor,
          subject: `rollback to #${toId}${record.subject ? `: ${record.subject}` : ''}`,
          model: target.model,
          warnings: [],
        },
        [],
        manifestOf(target.groups).manifest,
        appliedAt,
      );
      this.stores.audit.append(actor, 'rollback', { from: served?.id ?? null, to: toId, as: id, why });
      const a = this.active;
      if (a && isActive(a.state)) {
        this.stores.rollouts.save(a.id, { ...a.state, status: 'aborted', endedAt: appliedAt.toISOString() });
        this.stores.audit.append(actor, 'rollout-aborted', { rollout: a.id, by: 'rollback' });
      }
      return id;
    });
    if (served) this.suppressedTree = served.treeHash;
    this.active = undefined;
    this.update({ revision: { ...target, id, appliedAt: appliedAt.toISOString() }, rollout: undefined });
    this.log.warn({ versionId: id, to: toId, actor }, 'rolled back');
    return { status: 'applied', versionId: id, diagnostics: [] };
  }

  /** Holds a node group at an earlier version while the rest of the fleet moves on. */
  pin(group: string, versionId: number, actor: string): Promise<void> {
    return this.enqueue(() => {
      const pinned = this.revision(versionId);
      // Only a group that exists (now, or in the version to pin it to) can be pinned.
      const known = new Set([...(this.cache.current?.groups.keys() ?? []), ...pinned.groups.keys()]);
      if (!known.has(group))
        throw new FleetError(
          ErrorCodes.UNKNOWN_GROUP,
          `no node group "${group}" (known: ${[...known].sort().join(', ')})`,
        );
      this.stores.atomically(() => {
        this.stores.pins.set(group, versionId, actor);
        this.stores.audit.append(actor, 'pin', { group, versionId });
      });
      this.update({ pins: new Map(this.inputs?.pins).set(group, pinned) });
    });
  }

  unpin(group: string, actor: string): Promise<void> {
    return this.enqueue(() => {
      const removed = this.stores.atomically(() => {
        const removed = this.stores.pins.delete(group);
        if (removed) this.stores.audit.append(actor, 'unpin', { group });
        return removed;
      });
      if (!removed) throw new FleetError(ErrorCodes.NOT_PINNED, `node group "${group}" is not pinned`);
      const pins = new Map(this.inputs?.pins);
      pins.delete(group);
      this.update({ pins });
    });
  }

  /**
   * Certificate rotation: re-reads the served model's secret files. A valid change replaces the
   * secret input only (other types keep their snapshots, so only SDS is pushed, and only to nodes
   * that use the secret); a broken renewal keeps the last good material.
   */
  reloadSecrets(): Promise<'rotated' | 'unchanged' | 'rejected'> {
    return this.enqueue(async () => {
      const served = this.inputs?.revision;
      if (!served) return 'unchanged';
      const model = served.model;
      const loaded = await loadSecrets(
        model.secrets,
        resolve(this.configDir),
        (name) => model.origins[originKey('Secret', name)],
      );
      const built = hasErrors(loaded.diagnostics) ? undefined : buildSecrets(model, loaded.materials, this.caches);
      if (!built?.secrets) {
        const diagnostics = [...loaded.diagnostics, ...(built?.diagnostics ?? [])];
        this.log.error(
          { problems: diagnostics.map(formatDiagnostic) },
          'renewed secret files rejected; still serving the last good secrets',
        );
        this.stores.rejections.record(served.treeHash, 'secret files', diagnostics);
        this.events.emit('rejected', diagnostics);
        return 'rejected';
      }
      const changed = [...loaded.materials.values()].filter(
        (m) => this.material.get(m.name)?.fingerprint !== m.fingerprint,
      );
      if (!changed.length) return 'unchanged';
      this.material = loaded.materials;
      this.update({ secrets: built.secrets });
      const rotated = changed.map((m) => ({
        name: m.name,
        fingerprint: m.fingerprint.slice(0, 16),
        notAfter: m.notAfter,
      }));
      this.log.info({ secrets: rotated }, 'rotated secrets');
      return 'rotated';
    });
  }

  /**
   * Restart: reads and builds the model's secrets. Secrets whose files fail are left out (and
   * logged); the others are served, as they were before the restart.
   */
  private async readSecrets(model: Model, failure: string): Promise<Map<string, EncodedResource> | undefined> {
    const loaded = await loadSecrets(
      model.secrets,
      resolve(this.configDir),
      (name) => model.origins[originKey('Secret', name)],
    );
    if (hasErrors(loaded.diagnostics)) this.log.error({ problems: loaded.diagnostics.map(formatDiagnostic) }, failure);
    const built = buildSecrets(model, loaded.materials, this.caches);
    if (!built.secrets) {
      this.log.error({ problems: built.diagnostics.map(formatDiagnostic) }, failure);
      return undefined;
    }
    this.material = loaded.materials;
    return built.secrets;
  }

  /** A stored version as a revision (restored once, then reused); throws FXDS_UNKNOWN_VERSION. */
  private revision(id: number): Revision {
    if (this.inputs?.revision.id === id) return this.inputs.revision;
    const hit = this.restored.get(id);
    if (hit) return hit;
    const record = this.stores.revisions.get(id);
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

  /** A rollout that was under way when the server stopped resumes where it was. */
  private restoreRollout(revision: Revision): ActiveRollout | undefined {
    const stored = this.stores.rollouts.active();
    const policy = revision.model.rollouts?.[0];
    if (!stored || stored.state.to !== revision.id || !policy) return undefined;
    try {
      return { id: stored.id, from: this.revision(stored.state.from), plan: compilePlan(policy), state: stored.state };
    } catch (err) {
      this.log.error({ rollout: stored.id, err }, 'the rollout cannot be resumed; serving the newest version to all');
      return undefined;
    }
  }

  private restorePins(): Map<string, Revision> {
    const pins = new Map<string, Revision>();
    for (const pin of this.stores.pins.list()) {
      try {
        pins.set(pin.group, this.revision(pin.versionId));
      } catch (err) {
        this.log.error(
          { group: pin.group, versionId: pin.versionId, err },
          'pinned version cannot be restored; group follows the newest',
        );
      }
    }
    return pins;
  }

  /** From the stored manifest and encoded bytes: nothing translated or encoded. */
  private restore(record: VersionRecord & { model: Model }): Revision | undefined {
    const manifest = this.stores.revisions.manifest(record.id);
    const stored = manifest && this.stores.revisions.resources(manifest);
    if (!manifest || !stored) return undefined;
    const groups = new Map<string, RevisionGroup>();
    for (const [group, keys] of Object.entries(manifest)) {
      const resources: EncodedResource[] = [];
      const secretNames: string[] = [];
      for (const k of keys) {
        if (k.startsWith(SECRET_PREFIX)) secretNames.push(k.slice(SECRET_PREFIX.length));
        else {
          const r = stored.get(k)!;
          resources.push(this.caches.encoder.restore(r.kind, r.name, r.key, r.json, r.any));
        }
      }
      groups.set(group, { snapshot: makeGroupSnapshot(group, resources), secretNames });
    }
    return makeRevision({ ...revisionFields(record), groups });
  }

  /** A version stored without a manifest (older databases): built again from its model. */
  private rebuild(record: VersionRecord & { model: Model }): Revision | undefined {
    const built = buildConfig(record.model, this.caches, undefined, this.material);
    if (!built.config) {
      // Only possible if this build of fleetxds rejects what an older one accepted.
      this.log.error(
        { versionId: record.id, problems: built.diagnostics.map(formatDiagnostic) },
        'stored version no longer builds; waiting for the directory',
      );
      return undefined;
    }
    return makeRevision({ ...revisionFields(record), groups: revisionGroups(built.config.groups) });
  }
}

function revisionFields(r: VersionRecord & { model: Model }): Omit<Revision, 'resolver' | 'groups'> {
  return {
    id: r.id,
    modelHash: r.modelHash,
    treeHash: r.treeHash,
    appliedAt: r.appliedAt,
    commit: r.commitSha ?? undefined,
    model: r.model,
  };
}

/** The manifest of a revision's groups and the encoded resources it names (secrets by name only). */
function manifestOf(groups: ReadonlyMap<string, RevisionGroup>): { manifest: Manifest; resources: StoredResource[] } {
  const manifest: Manifest = {};
  const resources = new Map<string, StoredResource>();
  for (const [name, g] of groups) {
    const keys: string[] = [];
    for (const t of Object.values(g.snapshot.types)) {
      for (const r of t.resources.values()) {
        keys.push(r.key);
        resources.set(r.key, r);
      }
    }
    // Secrets hold private keys: the store keeps only their names (material is re-read from files).
    for (const s of g.secretNames) keys.push(SECRET_PREFIX + s);
    manifest[name] = keys;
  }
  return { manifest, resources: [...resources.values()] };
}

export interface ActiveRollout {
  readonly id: number;
  readonly from: Revision;
  readonly plan: RolloutPlan;
  readonly state: RolloutState;
}

function rulesOf(plan: RolloutPlan): StageRules {
  return {
    count: plan.stages.length,
    soakMs: (i) => plan.stages[i]?.gates.soakMs ?? 0,
    manual: (i) => plan.stages[i]?.gates.manual ?? false,
    onNack: plan.onNack,
  };
}

/** Whether a transition changes who is served which version. */
function servingChanged(a: RolloutState, b: RolloutState): boolean {
  return a.stage !== b.stage || a.status !== b.status || !!a.halt?.rolledBack !== !!b.halt?.rolledBack;
}

/** Whether any group would serve other bytes (model-only changes, like the policy itself, do not). */
function changesServed(from: Revision, to: Revision): boolean {
  for (const [name, g] of to.groups) {
    const old = from.groups.get(name);
    if (!old || old.secretNames.join() !== g.secretNames.join()) return true;
    for (const [kind, t] of Object.entries(g.snapshot.types))
      if (old.snapshot.types[kind as keyof typeof g.snapshot.types].version !== t.version) return true;
  }
  return false;
}
