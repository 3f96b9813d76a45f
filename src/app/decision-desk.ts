/**
 * Where operator decisions go. On a single replica a decision is applied here at once. With a
 * shared store (`replica.postgres`), it is appended to the shared log first and every replica,
 * this one included, applies the log in sequence order: the same decisions in the same order
 * everywhere, each applied once per replica (the sequence number applied last is kept in the
 * replica's SQLite, so a restart or a reconnect resumes after it).
 */
import type { Logger } from 'pino';
import type { Decision, DecisionResult, SharedDecisionStatus, UnappliedDecision } from '../decision-log/decision.ts';
import type { PostgresDecisionLog } from '../decision-log/postgres-log.ts';
import type { ReplicaStateStore } from '../store/replica-state.ts';
import type { ConfigPipeline, OperatorCommand } from './pipeline.ts';

const KEEP_UNAPPLIED = 20;
const KEEP_RESULTS = 64;

export class DecisionDesk {
  private appliedSeq: number;
  private catching?: Promise<void>;
  private again = false;
  private readonly results = new Map<number, DecisionResult>();
  private readonly unapplied: UnappliedDecision[] = [];
  /** The connection (its `since`) over which the log was last read to its end. */
  private readToEndOn?: string;

  constructor(
    private readonly pipeline: ConfigPipeline,
    private readonly log: Logger,
    private readonly state: ReplicaStateStore,
    private readonly shared?: PostgresDecisionLog,
  ) {
    this.appliedSeq = Number(state.get('decisions.appliedSeq') ?? 0);
    shared?.onWake(() => void this.catchUp());
  }

  /**
   * Shares a rollout transition this replica caused (the pipeline's `shareTransition`, when there
   * is a shared log). Called from inside the pipeline's queue: append only; the log is applied
   * after that task ends.
   */
  shareTransition(d: Decision & { kind: 'rollout' }, actor: string): Promise<void> {
    if (!this.shared) return Promise.reject(new Error('decisions are not shared'));
    return this.shared.append(d, actor).then(() => void this.catchUp());
  }

  /** Makes an operator's decision: checked here, then applied here or through the shared log. */
  async make(command: OperatorCommand, actor: string): Promise<DecisionResult> {
    const decision = this.pipeline.prepare(command);
    if (!this.shared) return this.pipeline.decide(decision, actor);
    const seq = await this.shared.append(decision, actor);
    return this.appliedTo(seq);
  }

  /** Resolves once the log is applied up to `seq`, with what applying `seq` did here. */
  private async appliedTo(seq: number): Promise<DecisionResult> {
    for (let tries = 0; this.appliedSeq < seq; tries++) {
      const before = this.appliedSeq;
      await this.catchUp();
      if (this.appliedSeq === before && tries >= 2)
        return { status: 'pending', reason: 'recorded in the shared log; this replica applies it when it can read it' };
    }
    return this.results.get(seq) ?? { status: 'applied' };
  }

  /** Applies every logged decision after the last applied one (one run at a time; a wake-up during a run reruns). */
  catchUp(): Promise<void> {
    if (this.catching) {
      this.again = true;
      return this.catching;
    }
    this.catching = (async () => {
      do {
        this.again = false;
        await this.applyPending();
      } while (this.again);
    })()
      .catch((err) => this.log.warn({ err: (err as Error).message }, 'shared decisions not read; retrying later'))
      .finally(() => (this.catching = undefined));
    return this.catching;
  }

  private async applyPending(): Promise<void> {
    const shared = this.shared;
    if (!shared) return;
    for (;;) {
      const connection = shared.status().since;
      const page = await shared.since(this.appliedSeq);
      if (!page.length) {
        this.readToEndOn = connection;
        return;
      }
      for (const entry of page) {
        const result: DecisionResult = entry.decision
          ? await this.pipeline.decide(entry.decision, entry.actor, entry.at)
          : { status: 'skipped', reason: 'not a decision this build knows' };
        this.record(entry.seq, entry.decision, result, entry.decision ? undefined : 'invalid');
        this.appliedSeq = entry.seq;
        this.state.set('decisions.appliedSeq', String(entry.seq));
      }
    }
  }

  private record(seq: number, d: Decision | undefined, result: DecisionResult, invalid?: 'invalid'): void {
    this.results.set(seq, result);
    if (this.results.size > KEEP_RESULTS) this.results.delete(this.results.keys().next().value as number);
    if (result.status === 'applied') return;
    const kind = d?.kind ?? 'unknown';
    const entry = { seq, kind, status: invalid ?? result.status, reason: result.reason };
    const level = result.status === 'missing' || invalid ? 'error' : 'info';
    this.log[level](entry, 'shared decision not applied on this replica');
    this.unapplied.push(entry);
    if (this.unapplied.length > KEEP_UNAPPLIED) this.unapplied.shift();
  }

  /** Resolves when no catch-up is running (before the stores close). */
  async idle(): Promise<void> {
    await this.catching;
  }

  /** Undefined when decisions are not shared. */
  status(): SharedDecisionStatus | undefined {
    if (!this.shared) return undefined;
    const store = this.shared.status();
    const known = store.connected && this.readToEndOn === store.since;
    return {
      ...store,
      appliedSeq: this.appliedSeq,
      behind: known ? Math.max(0, store.newestSeq - this.appliedSeq) : null,
      unapplied: [...this.unapplied],
    };
  }
}
