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
import { modelHash } from '../model/files.ts';
import { originIn, originKey, type Model, type SecretMaterial } from '../model/types.ts';
import { compilePlan } from '../rollout/plan.ts';
import {
  isActive,
  RolloutCommandError,
  startRollout,
  step,
  type RolloutEvent,
  type RolloutState,
} from '../rollout/state.ts';
import { formatDiagnostic, hasErrors, type Diagnostic } from '../shared/diagnostics.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import { buildSecrets } from '../snapshot/build.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import { newestGroup, reconcile, type ServedInputs } from '../snapshot/reconcile.ts';
import { makeRevision, revisionGroups, type Revision } from '../snapshot/revision.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { revisionOf } from '../source/git-info.ts';
import { loadSecrets } from '../source/secrets.ts';
import type { Stores } from '../store/database.ts';
import { PipelineCaches } from './caches.ts';
import { RevisionLoader, versionManifest } from './revision-loader.ts';
import { changesServed, rulesOf, servedRollout, servingChanged, type ActiveRollout } from '../rollout/active.ts';
import { checkTree } from './check-tree.ts';
import type { Decision, DecisionResult } from '../decisions/decision.ts';
import type { EnvoyChecker } from './envoy-check.ts';
import type { ServedPatchInfo } from '../admin/control.ts';
import type { Membership } from '../membership/membership.ts';
import type { ServiceDoc } from '../model/schema.ts';
import { buildLoadAssignment } from '../translate/endpoints.ts';
import { findByName } from '../shared/sorted-lists.ts';

export type ApplyOutcome =
  | { status: 'applied'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'unchanged'; versionId: number; diagnostics: Diagnostic[] }
  | { status: 'rejected'; diagnostics: Diagnostic[] }
  /** The tree could not be read completely for a reason that passes (read-tree.ts): read it again soon. */
  | { status: 'unreadable'; reason: string; diagnostics: Diagnostic[] };

/** An operator's decision as the admin API takes it: versions named by this replica's ids. */
export type OperatorCommand =
  | { kind: 'rollback'; versionId: number }
  | { kind: 'pin'; group: string; versionId: number }
  | { kind: 'unpin'; group: string }
  | { kind: 'rollout'; command: 'promote' | 'halt' | 'resume' | 'abort' };

/** Shares a rollout transition this replica's gates or proxies caused; rejects when it cannot. */
export type ShareTransition = (d: Decision & { kind: 'rollout' }, actor: string) => Promise<unknown>;

export interface ServedSecret {
  name: string;
  fingerprint: string;
  notAfter?: string;
  subject?: string;
}

export class ConfigPipeline {
  readonly caches: PipelineCaches;
  /** 'applied' (ms), 'rejected' (diagnostics), 'unreadable' (reason): for metrics. */
  readonly events = new EventEmitter();
  private queue: Promise<unknown> = Promise.resolve();
  /** The inputs of what is served; undefined until a version exists. */
  private inputs?: ServedInputs;
  /** TLS material of the served model's secrets (in memory only, never stored). */
  private material = new Map<string, SecretMaterial>();
  private lastRejectedTree?: string;
  /** The rollout under way (progressing or halted); its serving part is an input of reconcile. */
  private active?: ActiveRollout;
  /**
   * What a rollback replaced: the directory's tree (not read again until it changes) and the model
   * (not applied again from the directory: a replica that gets a rollback before the push it
   * reverts skips that push). Kept in the replica state, so a restart does not undo a rollback.
   */
  private suppressedTree?: string;
  private suppressedModel?: string;
  /** Set when decisions are shared between replicas: automatic rollout transitions go through it. */
  shareTransition?: ShareTransition;

  constructor(
    private readonly stores: Pick<
      Stores,
      'revisions' | 'pins' | 'audit' | 'rejections' | 'rollouts' | 'replicaState' | 'atomically'
    > &
      Partial<Pick<Stores, 'parses'>>,
    private readonly cache: SnapshotCache,
    private readonly log: Logger,
    /** The config directory Secret file paths are relative to. */
    private readonly configDir: string,
    /** Optional: real Envoy judges every tree before it is applied. */
    private readonly envoy?: EnvoyChecker,
  ) {
    this.caches = new PipelineCaches(stores.parses, (err, what) =>
      log.warn({ err: (err as Error).message, what }, 'parse cache unavailable; files are parsed again'),
    );
    this.revisions = new RevisionLoader(stores.revisions, this.caches, log);
  }

  /** Stored versions restored as revisions (pins, rollbacks, restarts, a rollout's start). */
  private readonly revisions: RevisionLoader;

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

  /** A service of the newest applied version. */
  servedService(name: string): ServiceDoc | undefined {
    return findByName(this.inputs?.revision.model.services ?? [], name);
  }

  /** The EnvoyPatch documents of the newest applied version, with the groups each applies to. */
  get servedPatches(): ServedPatchInfo[] {
    const model = this.inputs?.revision.model;
    if (!model) return [];
    return (model.envoyPatches ?? []).map((p) => ({
      name: p.name,
      groups: p.groups ?? 'all',
      target: `${p.target.kind}/${p.target.name}`,
      form: p.merge ? 'merge' : p.jsonPatch ? 'jsonPatch' : 'filters',
      ...(p.description !== undefined && { description: p.description }),
    }));
  }

  /**
   * Endpoints registered at run time: `changed` names the services whose members changed; their
   * assignments are encoded again and served (EDS only: nothing else changes, no version is made).
   */
  membersChanged(changed: ReadonlySet<string>): void {
    const served = this.inputs?.revision;
    if (!served || !this.membership) return;
    const members = new Map(this.inputs?.members);
    for (const name of changed) {
      const s = findByName(served.model.services, name);
      if (s?.registration) members.set(name, this.memberAssignment(s));
      else members.delete(name);
    }
    this.update({ members });
  }

  /** Where registrations are kept; set once at start, before the first version is served. */
  membership?: Membership;

  private memberAssignment(s: ServiceDoc): EncodedResource {
    return this.caches.encoder.encode('endpoint', s.name, buildLoadAssignment(s, this.membership!.members(s.name)));
  }

  /** The registered services' assignments for a revision (its static endpoints, today's members). */
  private membersFor(revision: Revision): Map<string, EncodedResource> {
    const out = new Map<string, EncodedResource>();
    if (this.membership)
      for (const s of revision.model.services) if (s.registration) out.set(s.name, this.memberAssignment(s));
    return out;
  }

  /** The group's snapshot in the newest applied version, as if nothing held it back (no pin, no stage). */
  newestGroup(group: string): GroupSnapshot | undefined {
    return this.inputs && newestGroup(this.inputs, group, this.cache.current);
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
      members: change.members ?? (revision === base?.revision ? base.members : this.membersFor(revision)),
    };
    this.cache.publish(reconcile(this.inputs, this.cache.current));
  }

  /** The rollout under way, if any (its state, its plan, the revision it started from). */
  get rollout(): ActiveRollout | undefined {
    return this.active;
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
   * Automatic rollout events: gate results and NACKs. When decisions are shared, a transition they
   * cause (a stage passed, a halt) is shared first and applied when it comes back from the log,
   * like an operator's; if it cannot be shared, a gate waits and a NACK halts here anyway.
   */
  rolloutEvent(event: RolloutEvent & { type: 'gates' | 'nack' }): Promise<RolloutState | undefined> {
    return this.enqueue(async () => {
      const a = this.active;
      if (!a || !isActive(a.state)) return undefined;
      const next = step(a.state, event, rulesOf(a.plan), new Date());
      const transition = next.stage !== a.state.stage || next.status !== a.state.status;
      if (transition && this.shareTransition && this.inputs) {
        const shared: Decision & { kind: 'rollout' } = {
          kind: 'rollout',
          to: this.inputs.revision.modelHash,
          stage: a.state.stage,
          status: a.state.status as 'progressing',
          event: event.type === 'nack' ? event : { type: 'promote' },
        };
        const ok = await this.shareTransition(shared, 'fleetxds').then(
          () => true,
          (err) => {
            this.log.error({ err: (err as Error).message, event: event.type }, 'rollout transition not shared');
            return false;
          },
        );
        if (ok || event.type === 'gates') return a.state;
      }
      return this.transition(a, event, 'fleetxds', next);
    });
  }

  /**
   * Feeds the rollout's state machine, saves and audits every transition, and serves what the new
   * state says. An abort serves the previous version again, recorded as a rollback.
   */
  private async transition(
    a: ActiveRollout,
    event: RolloutEvent,
    actor: string,
    computed?: RolloutState,
  ): Promise<RolloutState> {
    let next: RolloutState;
    try {
      next = computed ?? step(a.state, event, rulesOf(a.plan), new Date());
    } catch (err) {
      if (err instanceof RolloutCommandError) throw new FleetError(ErrorCodes.ROLLOUT_STATE, err.message);
      throw err;
    }
    if (next === a.state) return next;
    const automatic = event.type === 'gates' || event.type === 'nack' || actor === 'fleetxds';
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
    if (what) this.log.warn({ rollout: a.id, status: next.status, stage: a.plan.names[next.stage], actor }, 'rollout');
    if (next.status === 'aborted') {
      this.active = undefined;
      this.rollbackNow(a.from.id, actor, 'rollout aborted');
    } else if (next.status === 'complete') {
      this.active = undefined;
      this.update({ rollout: undefined });
    } else if (servingChanged(a.state, next)) {
      this.update({ rollout: servedRollout(this.active) });
    }
    return next;
  }

  /**
   * Checks an operator's command against what this replica serves and names its versions by
   * content, so any replica can apply it. Throws a FleetError when the command cannot be made.
   */
  prepare(c: OperatorCommand): Decision {
    const served = this.inputs?.revision;
    switch (c.kind) {
      case 'rollback': {
        const target = this.revisions.get(c.versionId, served);
        return { kind: 'rollback', to: target.modelHash, ...(served ? { replaces: served.modelHash } : {}) };
      }
      case 'pin': {
        const pinned = this.revisions.get(c.versionId, served);
        this.checkGroup(c.group, pinned);
        return { kind: 'pin', group: c.group, to: pinned.modelHash };
      }
      case 'unpin':
        if (!this.stores.pins.list().some((p) => p.group === c.group))
          throw new FleetError(ErrorCodes.NOT_PINNED, `node group "${c.group}" is not pinned`);
        return { kind: 'unpin', group: c.group };
      case 'rollout': {
        const a = this.active;
        if (!a || !isActive(a.state) || !served) throw new FleetError(ErrorCodes.NO_ROLLOUT, 'no rollout is under way');
        try {
          step(a.state, { type: c.command }, rulesOf(a.plan), new Date());
        } catch (err) {
          if (err instanceof RolloutCommandError) throw new FleetError(ErrorCodes.ROLLOUT_STATE, err.message);
          throw err;
        }
        const status = a.state.status as 'progressing' | 'halted';
        return { kind: 'rollout', to: served.modelHash, stage: a.state.stage, status, event: { type: c.command } };
      }
    }
  }

  /**
   * Applies a decision, made here or on another replica. Versions are found by model hash; a
   * decision that no longer applies (the fleet moved on) is skipped, one naming a version this
   * replica never applied is reported missing. Both are returned, not thrown: the decision is
   * already made (and, when shared, in the log), and this replica goes on with the next.
   */
  decide(d: Decision, actor: string): Promise<DecisionResult> {
    return this.enqueue(async (): Promise<DecisionResult> => {
      const served = this.inputs?.revision;
      const missing = (hash: string): DecisionResult => ({
        status: 'missing',
        reason: `version ${hash.slice(0, 12)} was never applied on this replica`,
      });
      switch (d.kind) {
        case 'rollback': {
          const id = this.stores.revisions.idOfModel(d.to);
          if (id === undefined) return missing(d.to);
          if (d.replaces && served && served.modelHash !== d.replaces && this.stores.revisions.idOfModel(d.replaces))
            return { status: 'skipped', reason: 'superseded: a newer version was applied since' };
          const outcome = this.rollbackNow(id, actor, 'rollback', { model: d.replaces });
          return { status: 'applied', versionId: 'versionId' in outcome ? outcome.versionId : undefined };
        }
        case 'pin': {
          const id = this.stores.revisions.idOfModel(d.to);
          if (id === undefined) return missing(d.to);
          const pinned = this.revisions.get(id, served);
          try {
            this.checkGroup(d.group, pinned);
          } catch (err) {
            return { status: 'skipped', reason: (err as Error).message };
          }
          this.stores.atomically(() => {
            this.stores.pins.set(d.group, id, actor);
            this.stores.audit.append(actor, 'pin', { group: d.group, versionId: id });
          });
          this.update({ pins: new Map(this.inputs?.pins).set(d.group, pinned) });
          return { status: 'applied', versionId: id };
        }
        case 'unpin': {
          const removed = this.stores.atomically(() => {
            const removed = this.stores.pins.delete(d.group);
            if (removed) this.stores.audit.append(actor, 'unpin', { group: d.group });
            return removed;
          });
          if (!removed) return { status: 'skipped', reason: `node group "${d.group}" is not pinned` };
          const pins = new Map(this.inputs?.pins);
          pins.delete(d.group);
          this.update({ pins });
          return { status: 'applied' };
        }
        case 'rollout': {
          const a = this.active;
          if (!a || !isActive(a.state)) return { status: 'skipped', reason: 'no rollout is under way' };
          if (served?.modelHash !== d.to) return { status: 'skipped', reason: 'a transition of another rollout' };
          if (a.state.stage !== d.stage || a.state.status !== d.status)
            return { status: 'skipped', reason: 'the rollout is past the state this transition was decided in' };
          await this.transition(a, d.event, actor);
          return { status: 'applied' };
        }
      }
    });
  }

  /** Only a group that exists (now, or in the version to pin it to) can be pinned. */
  private checkGroup(group: string, pinned: Revision): void {
    const known = new Set([...(this.cache.current?.groups.keys() ?? []), ...pinned.groups.keys()]);
    if (!known.has(group))
      throw new FleetError(
        ErrorCodes.UNKNOWN_GROUP,
        `no node group "${group}" (known: ${[...known].sort().join(', ')})`,
      );
  }

  /** Records what a rollback replaced (undefined clears), here and in the replica state. */
  private suppress(tree: string | undefined, model: string | undefined): void {
    this.suppressedTree = tree;
    this.suppressedModel = model;
    this.stores.atomically(() => {
      this.stores.replicaState.set('rollback.suppressedTree', tree);
      this.stores.replicaState.set('rollback.suppressedModel', model);
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
      const record = this.stores.revisions.latest();
      if (!record) return false;
      // TLS material is never in the store: read it again from its files.
      const secrets = await this.readSecrets(
        record.head,
        'secrets of the stored version cannot be loaded; they are not served',
      );
      const revision = this.revisions.fromRecord(record, this.material);
      if (!revision) return false;
      this.suppressedTree = this.stores.replicaState.get('rollback.suppressedTree');
      this.suppressedModel = this.stores.replicaState.get('rollback.suppressedModel');
      this.active = this.restoreRollout(revision);
      this.update({
        revision,
        pins: this.restorePins(),
        secrets: secrets ?? new Map(),
        rollout: servedRollout(this.active),
      });
      this.log.info(
        { versionId: revision.id, modelHash: revision.modelHash.slice(0, 12) },
        'serving last good version from the store',
      );
      return true;
    });
  }

  applyDirectory(dir: string): Promise<ApplyOutcome> {
    return this.enqueue(async () => {
      try {
        return await this.applyNow(dir);
      } finally {
        // New parses are stored once the change is out: responses are written before SQLite syncs.
        await new Promise<void>((r) => setImmediate(r));
        this.caches.source.flush();
      }
    });
  }

  /** Resolves when every queued change has been handled (before the stores close). */
  idle(): Promise<unknown> {
    return this.queue;
  }

  private async applyNow(dir: string): Promise<ApplyOutcome> {
    const started = performance.now();
    const cpuAtStart = process.cpuUsage();
    const served = this.inputs?.revision;
    // Which commit the tree is (a git process, or a release file): looked up while the tree is checked.
    const revisionLookup = revisionOf(dir);
    const check = await checkTree(dir, this.caches, {
      // Nothing is parsed when the tree is byte-for-byte the one being served (e.g. at every start).
      unlessTreeHash: [served?.treeHash, this.suppressedTree],
      previous: served && new Map([...served.groups].map(([name, g]) => [name, g.snapshot])),
      against: this.cache.current?.groups,
      envoy: this.envoy,
    });
    if (check.unchanged && served) return { status: 'unchanged', versionId: served.id, diagnostics: [] };
    if (check.incomplete) {
      // Neither a verdict on the tree nor a rejection to record: what is served stays, the tree is read again.
      this.events.emit('unreadable', check.incomplete);
      return { status: 'unreadable', reason: check.incomplete, diagnostics: check.diagnostics };
    }
    const secrets = check.model && check.config && buildSecrets(check.model, check.secrets ?? new Map(), this.caches);
    if (!check.model || !check.config || !secrets?.secrets) {
      const diagnostics = [...check.diagnostics, ...(secrets?.diagnostics ?? [])];
      return this.reject(check.treeHash, dir, diagnostics);
    }
    this.lastRejectedTree = undefined;
    const hash = modelHash(check.model);
    if (served && hash === this.suppressedModel) {
      // The push a rollback reverted (reached here after the rollback, from another replica).
      this.suppress(check.treeHash, hash);
      return { status: 'unchanged', versionId: served.id, diagnostics: check.diagnostics };
    }
    // The directory moved on since a rollback: it is the source again.
    if (this.suppressedTree || this.suppressedModel) this.suppress(undefined, undefined);
    if (served && served.modelHash === hash)
      return { status: 'unchanged', versionId: served.id, diagnostics: check.diagnostics };
    const appliedAt = new Date();
    const groups = revisionGroups(check.config.groups);
    const rev = await revisionLookup;
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
      versionManifest(groups),
      appliedAt,
    );
    this.material = check.secrets ?? new Map<string, SecretMaterial>();
    const revision = makeRevision({
      id,
      modelHash: hash,
      treeHash: check.treeHash,
      appliedAt: appliedAt.toISOString(),
      commit: rev?.commit,
      subject: rev?.subject,
      model: check.model,
      groups,
    });
    this.active = this.rolloutFor(revision, served, appliedAt);
    // What the change cost before any proxy was sent anything, and what handing it to every stream took.
    const cpu = process.cpuUsage(cpuAtStart);
    const publishing = performance.now();
    this.update({ revision, secrets: secrets.secrets, rollout: servedRollout(this.active) });
    const ms = performance.now() - started;
    this.log.info(
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

  /** A rollback ends a rollout under way: the operator chose one version for everyone. */
  private rollbackNow(
    toId: number,
    actor: string,
    why = 'rollback',
    /** The model a shared rollback names as replaced (default: the one served here). */
    replaces?: { model: string | undefined },
  ): ApplyOutcome {
    const target = this.revisions.get(toId, this.inputs?.revision);
    const subject = `rollback to #${toId}${target.subject ? `: ${target.subject}` : ''}`;
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
          subject,
          model: target.model,
          warnings: [],
        },
        versionManifest(target.groups),
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
    if (replaces) this.suppress(served?.treeHash ?? this.suppressedTree, replaces.model);
    else if (served) this.suppress(served.treeHash, served.modelHash);
    this.active = undefined;
    this.update({ revision: { ...target, id, subject, appliedAt: appliedAt.toISOString() }, rollout: undefined });
    this.log.warn({ versionId: id, to: toId, actor }, 'rolled back');
    return { status: 'applied', versionId: id, diagnostics: [] };
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
      const loaded = await this.loadSecretFiles(model);
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

  /** The TLS material of a model's Secret documents, read from files relative to the config folder. */
  private loadSecretFiles(model: Model): ReturnType<typeof loadSecrets> {
    return loadSecrets(model.secrets, resolve(this.configDir), (name) => originIn(model, originKey('Secret', name)));
  }

  /**
   * Restart: reads and builds the model's secrets. Secrets whose files fail are left out (and
   * logged); the others are served, as they were before the restart.
   */
  private async readSecrets(model: Model, failure: string): Promise<Map<string, EncodedResource> | undefined> {
    const loaded = await this.loadSecretFiles(model);
    if (hasErrors(loaded.diagnostics)) this.log.error({ problems: loaded.diagnostics.map(formatDiagnostic) }, failure);
    const built = buildSecrets(model, loaded.materials, this.caches);
    if (!built.secrets) {
      this.log.error({ problems: built.diagnostics.map(formatDiagnostic) }, failure);
      return undefined;
    }
    this.material = loaded.materials;
    return built.secrets;
  }

  /** A rollout that was under way when the server stopped resumes where it was. */
  private restoreRollout(revision: Revision): ActiveRollout | undefined {
    const stored = this.stores.rollouts.active();
    if (!stored || stored.state.to !== revision.id) return undefined;
    const policy = revision.model.rollouts?.[0];
    if (!policy) return undefined;
    try {
      return {
        id: stored.id,
        from: this.revisions.get(stored.state.from, this.inputs?.revision),
        plan: compilePlan(policy),
        state: stored.state,
      };
    } catch (err) {
      this.log.error({ rollout: stored.id, err }, 'the rollout cannot be resumed; serving the newest version to all');
      return undefined;
    }
  }

  private restorePins(): Map<string, Revision> {
    const pins = new Map<string, Revision>();
    for (const pin of this.stores.pins.list()) {
      try {
        pins.set(pin.group, this.revisions.get(pin.versionId, this.inputs?.revision));
      } catch (err) {
        this.log.error(
          { group: pin.group, versionId: pin.versionId, err },
          'pinned version cannot be restored; group follows the newest',
        );
      }
    }
    return pins;
  }
}
