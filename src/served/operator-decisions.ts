/**
 * Operator decisions and staged rollouts: rollbacks, pins, the rollout's transitions (by an
 * operator, by its gates, by a NACK), each recorded and audited in the store and then served
 * through the one publish path (ServedState.update). Decisions name versions by content (model
 * hashes) so that every replica can apply the same decision; `share` hands a transition this
 * replica caused to the other replicas (the shared decision log) when there are several.
 */
import type { Logger } from 'pino';
import type { Decision, DecisionResult } from '../decision-log/decision.ts';
import { changesServed, rulesOf, servedRollout, servingChanged, type ActiveRollout } from '../rollout/active.ts';
import { compilePlan } from '../rollout/plan.ts';
import {
  isActive,
  RolloutCommandError,
  startRollout,
  step,
  type RolloutEvent,
  type RolloutState,
} from '../rollout/state.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import type { Revision } from '../snapshot/revision.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { Stores } from '../store/database.ts';
import { versionManifest, type RevisionLoader } from './revision-loader.ts';
import type { RollbackSuppression } from './rollback-suppression.ts';
import type { ServedState } from './served-state.ts';

/** An operator's decision as the admin API takes it: versions named by this replica's ids. */
export type OperatorCommand =
  | { kind: 'rollback'; versionId: number }
  | { kind: 'pin'; group: string; versionId: number }
  | { kind: 'unpin'; group: string }
  | { kind: 'rollout'; command: 'promote' | 'halt' | 'resume' | 'abort' };

/** Shares a rollout transition this replica's gates or proxies caused; rejects when it cannot. */
export type ShareTransition = (d: Decision & { kind: 'rollout' }, actor: string) => Promise<unknown>;

export type DecisionStores = Pick<Stores, 'revisions' | 'pins' | 'audit' | 'rollouts' | 'atomically'>;

export class OperatorDecisions {
  /** The rollout under way (progressing or halted); its serving part is an input of reconcile. */
  private current?: ActiveRollout;

  constructor(
    private readonly stores: DecisionStores,
    private readonly served: ServedState,
    private readonly revisions: RevisionLoader,
    private readonly suppression: RollbackSuppression,
    private readonly cache: SnapshotCache,
    private readonly log: Logger,
    /** Set when decisions are shared between replicas: automatic rollout transitions go through it. */
    private readonly share?: ShareTransition,
  ) {}

  get active(): ActiveRollout | undefined {
    return this.current;
  }

  /**
   * A new revision with a Rollout policy starts a rollout from the version the fleet is on (the
   * previous revision, or the one a superseded rollout started from), which becomes the rollout
   * under way. Without a policy, or when nothing served changes, everyone gets the new revision at
   * once (no rollout). Returns the rollout under way.
   */
  rolloutFor(revision: Revision, served: Revision | undefined, at: Date): ActiveRollout | undefined {
    this.current = this.startedFor(revision, served, at);
    return this.current;
  }

  private startedFor(revision: Revision, served: Revision | undefined, at: Date): ActiveRollout | undefined {
    const policy = revision.model.rollouts?.[0];
    const superseded = this.current && isActive(this.current.state) ? this.current : undefined;
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
  async rolloutEvent(event: RolloutEvent & { type: 'gates' | 'nack' }): Promise<RolloutState | undefined> {
    const a = this.current;
    if (!a || !isActive(a.state)) return undefined;
    const next = step(a.state, event, rulesOf(a.plan), new Date());
    const transition = next.stage !== a.state.stage || next.status !== a.state.status;
    const newest = this.served.revision;
    if (transition && this.share && newest) {
      const shared: Decision & { kind: 'rollout' } = {
        kind: 'rollout',
        to: newest.modelHash,
        stage: a.state.stage,
        status: a.state.status as 'progressing',
        event: event.type === 'nack' ? event : { type: 'promote' },
      };
      const ok = await this.share(shared, 'fleetxds').then(
        () => true,
        (err) => {
          this.log.error({ err: (err as Error).message, event: event.type }, 'rollout transition not shared');
          return false;
        },
      );
      if (ok || event.type === 'gates') return a.state;
    }
    return this.transition(a, event, 'fleetxds', next);
  }

  /**
   * Feeds the rollout's state machine, saves and audits every transition, and serves what the new
   * state says. An abort serves the previous version again, recorded as a rollback.
   */
  private transition(a: ActiveRollout, event: RolloutEvent, actor: string, computed?: RolloutState): RolloutState {
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
    this.current = { ...a, state: next };
    if (what) this.log.warn({ rollout: a.id, status: next.status, stage: a.plan.names[next.stage], actor }, 'rollout');
    if (next.status === 'aborted') {
      this.current = undefined;
      this.rollbackNow(a.from.id, actor, 'rollout aborted');
    } else if (next.status === 'complete') {
      this.current = undefined;
      this.served.update({ rollout: undefined });
    } else if (servingChanged(a.state, next)) {
      this.served.update({ rollout: servedRollout(this.current) });
    }
    return next;
  }

  /**
   * Checks an operator's command against what this replica serves and names its versions by
   * content, so any replica can apply it. Throws a FleetError when the command cannot be made.
   */
  prepare(c: OperatorCommand): Decision {
    const served = this.served.revision;
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
        const a = this.current;
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
   *
   * A rollback is superseded only by a version this replica applied after it was decided
   * (`decidedAt`): a replica that was down meanwhile, whose own history went another way (A, B, A
   * here while the others went A, B), applies it like the others, so a shared rollback means the
   * same version everywhere.
   */
  decide(d: Decision, actor: string, decidedAt?: string): DecisionResult {
    const served = this.served.revision;
    const missing = (hash: string): DecisionResult => ({
      status: 'missing',
      reason: `version ${hash.slice(0, 12)} was never applied on this replica`,
    });
    switch (d.kind) {
      case 'rollback': {
        const id = this.stores.revisions.idOfModel(d.to);
        if (id === undefined) return missing(d.to);
        if (
          d.replaces &&
          served &&
          served.modelHash !== d.replaces &&
          this.stores.revisions.idOfModel(d.replaces) &&
          (decidedAt === undefined || Date.parse(served.appliedAt) > Date.parse(decidedAt))
        )
          return { status: 'skipped', reason: 'superseded: a newer version was applied since' };
        const versionId = this.rollbackNow(id, actor, 'rollback', { model: d.replaces });
        return { status: 'applied', versionId };
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
        this.served.update({ pins: new Map(this.served.pins).set(d.group, pinned) });
        return { status: 'applied', versionId: id };
      }
      case 'unpin': {
        const removed = this.stores.atomically(() => {
          const removed = this.stores.pins.delete(d.group);
          if (removed) this.stores.audit.append(actor, 'unpin', { group: d.group });
          return removed;
        });
        if (!removed) return { status: 'skipped', reason: `node group "${d.group}" is not pinned` };
        const pins = new Map(this.served.pins);
        pins.delete(d.group);
        this.served.update({ pins });
        return { status: 'applied' };
      }
      case 'rollout': {
        const a = this.current;
        if (!a || !isActive(a.state)) return { status: 'skipped', reason: 'no rollout is under way' };
        if (served?.modelHash !== d.to) return { status: 'skipped', reason: 'a transition of another rollout' };
        if (a.state.stage !== d.stage || a.state.status !== d.status)
          return { status: 'skipped', reason: 'the rollout is past the state this transition was decided in' };
        this.transition(a, d.event, actor);
        return { status: 'applied' };
      }
    }
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

  /** A rollback ends a rollout under way: the operator chose one version for everyone. Returns the new version's id. */
  private rollbackNow(
    toId: number,
    actor: string,
    why = 'rollback',
    /** The model a shared rollback names as replaced (default: the one served here). */
    replaces?: { model: string | undefined },
  ): number {
    const target = this.revisions.get(toId, this.served.revision);
    const subject = `rollback to #${toId}${target.subject ? `: ${target.subject}` : ''}`;
    const served = this.served.revision;
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
      const a = this.current;
      if (a && isActive(a.state)) {
        this.stores.rollouts.save(a.id, { ...a.state, status: 'aborted', endedAt: appliedAt.toISOString() });
        this.stores.audit.append(actor, 'rollout-aborted', { rollout: a.id, by: 'rollback' });
      }
      return id;
    });
    if (replaces) this.suppression.set(served?.treeHash ?? this.suppression.tree, replaces.model);
    else if (served) this.suppression.set(served.treeHash, served.modelHash);
    this.current = undefined;
    this.served.update({
      revision: { ...target, id, subject, appliedAt: appliedAt.toISOString() },
      rollout: undefined,
    });
    this.log.warn({ versionId: id, to: toId, actor }, 'rolled back');
    return id;
  }

  /** Restart: a rollout that was under way when the server stopped resumes where it was. */
  restoreRollout(revision: Revision): void {
    this.current = this.storedRollout(revision);
  }

  private storedRollout(revision: Revision): ActiveRollout | undefined {
    const stored = this.stores.rollouts.active();
    if (!stored || stored.state.to !== revision.id) return undefined;
    const policy = revision.model.rollouts?.[0];
    if (!policy) return undefined;
    try {
      return {
        id: stored.id,
        from: this.revisions.get(stored.state.from, this.served.revision),
        plan: compilePlan(policy),
        state: stored.state,
      };
    } catch (err) {
      this.log.error({ rollout: stored.id, err }, 'the rollout cannot be resumed; serving the newest version to all');
      return undefined;
    }
  }

  /** Restart: the groups pinned when the server stopped, at their versions. */
  restorePins(): Map<string, Revision> {
    const pins = new Map<string, Revision>();
    for (const pin of this.stores.pins.list()) {
      try {
        pins.set(pin.group, this.revisions.get(pin.versionId, this.served.revision));
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
