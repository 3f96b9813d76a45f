/**
 * What drives a rollout from outside the pipeline: gate evaluation twice a second (ACKs arrive
 * all the time and a soak ends on time), NACKs from the node registry, and the views and
 * commands the admin API offers. The decisions themselves are the state machine's, applied by the
 * pipeline.
 */
import type { Logger } from 'pino';
import { compilePlan, type RolloutPlan } from '../rollout/plan.ts';
import { rolloutProgress } from '../rollout/progress.ts';
import type { RolloutState } from '../rollout/state.ts';
import { rolloutView, type RolloutView } from '../rollout/view.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { statusNode, type NackReport, type NodeRegistry } from '../status/node-registry.ts';
import type { Stores } from '../store/database.ts';
import type { ConfigPipeline } from './pipeline.ts';

const GATES_EVERY_MS = 500;

/** (node, type, version) NACKs remembered per rollout: a client chooses its node id. */
const MAX_NACK_KEYS = 100_000;

export class RolloutDriver {
  private readonly timer: NodeJS.Timeout;
  private nacksSeen: { rollout: number; keys: Set<string> } = { rollout: -1, keys: new Set() };

  constructor(
    private readonly pipeline: ConfigPipeline,
    private readonly cache: SnapshotCache,
    private readonly registry: NodeRegistry,
    private readonly stores: Pick<Stores, 'rollouts' | 'revisions'>,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => this.evaluateGates(), GATES_EVERY_MS);
    this.timer.unref();
  }

  private nodes() {
    return [...this.registry.connected(), ...this.registry.polling()];
  }

  private evaluateGates(): void {
    const a = this.pipeline.rollout;
    if (!a || a.state.status !== 'progressing') return;
    const { gateHolds } = rolloutProgress(a.plan, a.state, this.cache.current, this.nodes());
    void this.pipeline
      .rolloutEvent({ type: 'gates', acked: gateHolds })
      .catch((err) => this.log.error({ err }, 'rollout gate evaluation failed'));
  }

  /**
   * A NACK from a proxy on a rollout's new version halts it (the state machine decides). Each
   * node's NACK of a type and version is handed on once per rollout: a version NACKed before,
   * reverted and pushed again, is guarded again.
   */
  nacked(n: NackReport): void {
    const a = this.pipeline.rollout;
    if (!a) return;
    if (this.nacksSeen.rollout !== a.id) this.nacksSeen = { rollout: a.id, keys: new Set() };
    const key = `${n.stream.nodeId}\u0000${n.typeUrl}\u0000${n.version}`;
    if (this.nacksSeen.keys.has(key)) return;
    if (this.nacksSeen.keys.size >= MAX_NACK_KEYS) this.nacksSeen.keys.clear();
    this.nacksSeen.keys.add(key);
    if (!n.stream.authenticated && !a.plan.acceptsUnauthenticated) {
      // Anyone may claim a node id without credentials: such a NACK is recorded, but steers nothing.
      this.log.warn(
        { node: n.stream.nodeId, typeUrl: n.typeUrl },
        'NACK from a node the transport did not authenticate: the rollout does not count it',
      );
      return;
    }
    const node = statusNode(n.stream);
    const nodeStage = a.plan.stageOf(node, n.stream.group);
    void this.pipeline
      .rolloutEvent({ type: 'nack', nodeStage, nodeId: node.id, typeUrl: n.typeUrl, message: n.message })
      .catch((err) => this.log.error({ err }, 'rollout NACK handling failed'));
  }

  private view(r: { id: number; plan: RolloutPlan; state: RolloutState }): RolloutView {
    return rolloutView(r, this.cache.current, this.nodes());
  }

  /** The rollout under way, or the last one that ended (for context). */
  status(): { rollout: RolloutView | null; last?: RolloutView } {
    const active = this.pipeline.rollout;
    if (active) return { rollout: this.view(active) };
    const last = this.stores.rollouts.latest();
    const policy = last && this.stores.revisions.get(last.state.to)?.head.rollouts?.[0];
    return { rollout: null, ...(last && policy ? { last: this.view({ ...last, plan: compilePlan(policy) }) } : {}) };
  }

  /** The rollout under way, if any (after a command: what it did). */
  current(): RolloutView | null {
    const active = this.pipeline.rollout;
    return active ? this.view(active) : null;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
