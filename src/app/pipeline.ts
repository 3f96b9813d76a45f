/**
 * The write path, wired: one queue for every change, and the jobs it runs in order.
 *  - TreeApply (served/tree-apply.ts): a tree compiled into a candidate (compile/check-tree.ts),
 *    recorded as a version, staged by a rollout policy, served; renewed secret files; a restart.
 *  - OperatorDecisions (served/operator-decisions.ts): rollbacks, pins and rollout transitions,
 *    made here or on another replica.
 *  - ServedState (served/served-state.ts): what is served as explicit inputs, and its one publish
 *    path (`update` -> reconcile -> publish). Nothing else publishes.
 */
import type { ConnectedFleet } from '../model/fleet.ts';
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { PipelineCaches } from '../compile/caches.ts';
import type { EnvoyChecker } from '../compile/envoy-check.ts';
import type { Decision, DecisionResult } from '../decision-log/decision.ts';
import type { Membership } from '../membership/membership.ts';
import type { ActiveRollout } from '../rollout/active.ts';
import type { RolloutEvent, RolloutState } from '../rollout/state.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { Stores } from '../store/database.ts';
import { OperatorDecisions, type OperatorCommand, type ShareTransition } from '../served/operator-decisions.ts';
import { RevisionLoader } from '../served/revision-loader.ts';
import { RollbackSuppression } from '../served/rollback-suppression.ts';
import { ServedState } from '../served/served-state.ts';
import { TreeApply, type ApplyOutcome } from '../served/tree-apply.ts';
import type { ResourceKind } from '../xds/resource-types.ts';

export type { ApplyOutcome } from '../served/tree-apply.ts';
export type { OperatorCommand, ShareTransition } from '../served/operator-decisions.ts';
export type { ServedSecret } from '../served/served-state.ts';

export interface PipelineOptions {
  /** Real Envoy judges every tree before it is applied. */
  envoy?: EnvoyChecker;
  /** Where endpoints register at run time. */
  membership?: Membership;
  /** Set when decisions are shared between replicas: automatic rollout transitions go through it. */
  shareTransition?: ShareTransition;
  /** The gRPC releases connected per node group (this replica's nodes). */
  fleet?: () => ConnectedFleet;
}

export class ConfigPipeline {
  readonly caches: PipelineCaches;
  /** 'applied' (ms), 'rejected' (diagnostics), 'unreadable' (reason): for metrics. */
  readonly events = new EventEmitter();
  /** What is served and its one publish path. */
  readonly served: ServedState;
  private readonly decisions: OperatorDecisions;
  private readonly trees: TreeApply;
  private readonly revisions: RevisionLoader;
  private queue: Promise<unknown> = Promise.resolve();
  /** Applies the tree again when its next override falls due. */
  private expiryTimer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    stores: Pick<
      Stores,
      'revisions' | 'pins' | 'audit' | 'rejections' | 'rollouts' | 'replicaState' | 'atomically' | 'overrideWindows'
    > &
      Partial<Pick<Stores, 'parses'>>,
    cache: SnapshotCache,
    private readonly log: Logger,
    /** The config directory Secret file paths are relative to. */
    configDir: string,
    opts: PipelineOptions = {},
  ) {
    this.caches = new PipelineCaches(stores.parses, (err, what) =>
      log.warn({ err: (err as Error).message, what }, 'parse cache unavailable; files are parsed again'),
    );
    const revisions = new RevisionLoader(stores.revisions, this.caches, log);
    this.revisions = revisions;
    const suppression = new RollbackSuppression(stores);
    this.served = new ServedState(cache, this.caches.encoder, opts.membership);
    this.decisions = new OperatorDecisions(
      stores,
      this.served,
      revisions,
      suppression,
      cache,
      log,
      opts.shareTransition,
    );
    this.trees = new TreeApply({
      stores,
      served: this.served,
      decisions: this.decisions,
      suppression,
      revisions,
      caches: this.caches,
      cache,
      log,
      events: this.events,
      configDir,
      envoy: opts.envoy,
      fleet: opts.fleet,
    });
  }

  /**
   * One resource as a stored version serves it to a group (JSON), for the history's diff;
   * undefined when the group or resource is not in it. Throws FXDS_UNKNOWN_VERSION.
   */
  resourceAt(versionId: number, group: string, kind: ResourceKind, name: string): object | undefined {
    return this.revisions.get(versionId).groups.get(group)?.snapshot.types[kind].resources.get(name)?.json;
  }

  /** The newest read of the directory (or of the served secret files) was refused. */
  get refusalIsCurrent(): boolean {
    return this.trees.refusalIsCurrent;
  }

  /** The rollout under way, if any (its state, its plan, the revision it started from). */
  get rollout(): ActiveRollout | undefined {
    return this.decisions.active;
  }

  /** Restart: serves the newest stored version before the directory has been read. */
  loadLatestFromStore(): Promise<boolean> {
    return this.enqueue(() => this.trees.restore());
  }

  applyDirectory(dir: string): Promise<ApplyOutcome> {
    return this.enqueue(async () => {
      try {
        return await this.trees.apply(dir);
      } finally {
        this.armExpiry(dir);
        // New parses are stored once the change is out: responses are written before SQLite syncs.
        await new Promise<void>((r) => setImmediate(r));
        this.caches.source.flush();
      }
    });
  }

  reloadSecrets(): Promise<'rotated' | 'unchanged' | 'rejected'> {
    return this.enqueue(() => this.trees.reloadSecrets());
  }

  /** Checks an operator's command and names its versions by content (throws a FleetError when it cannot be made). */
  prepare(c: OperatorCommand): Decision {
    return this.decisions.prepare(c);
  }

  /**
   * Applies a decision, made here or on another replica (`decidedAt`: when, as the shared log
   * recorded it), in turn with every other change.
   */
  decide(d: Decision, actor: string, decidedAt?: string): Promise<DecisionResult> {
    return this.enqueue(() => this.decisions.decide(d, actor, decidedAt));
  }

  /** Automatic rollout events: gate results and NACKs. */
  rolloutEvent(event: RolloutEvent & { type: 'gates' | 'nack' }): Promise<RolloutState | undefined> {
    return this.enqueue(() => this.decisions.rolloutEvent(event));
  }

  /** Endpoints registered at run time changed for these services. */
  membersChanged(changed: ReadonlySet<string>): void {
    this.served.membersChanged(changed);
  }

  /**
   * The next deadline of what is served: the tree is applied again then, and the version it makes
   * leaves out what lapsed. Timers fire at most every 2^31 ms: a later deadline re-arms.
   */
  private armExpiry(dir: string): void {
    clearTimeout(this.expiryTimer);
    const next = this.trees.nextDeadline;
    if (next === undefined || this.stopped) return;
    const wait = Math.min(Math.max(next - Date.now(), 0), 2 ** 31 - 1);
    this.expiryTimer = setTimeout(
      () => void this.applyDirectory(dir).catch((err) => this.log.error({ err }, 'applying at a deadline failed')),
      wait,
    );
    this.expiryTimer.unref();
  }

  /** No more deadlines are acted on (shutdown). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.expiryTimer);
  }

  /** Resolves when every queued change has been handled (before the stores close). */
  idle(): Promise<unknown> {
    return this.queue;
  }

  private enqueue<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
