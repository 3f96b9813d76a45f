/**
 * Holding a stream's listeners and routes back while clusters it was just sent are warming.
 *
 * Envoy warms a new EDS cluster until its ClusterLoadAssignment arrives, and it asks for that CLA
 * only after it has applied the CDS response. A route that names the cluster before then finds
 * no cluster and answers 503 ("routes are not warmed", docs/xds-protocol.md §4.7). So on an ADS
 * stream, after a push that introduced clusters, LDS/RDS (and the CDS that drops clusters the old
 * routes still use) wait until this stream has sent the CLA of every introduced cluster, or until
 * `limitMs` has passed (a client that never asks must not freeze its routes for ever).
 *
 * What holds: responses of the kinds in HELD_KINDS, pushed or requested (filter configs too: an
 * authorization server or a rate limit service is a cluster). Endpoints, secrets and the runtime
 * layer never wait: the first two are what warming needs, the last references nothing.
 */
import type { ResourceKind } from '../xds/resource-types.ts';

export const HELD_KINDS: ReadonlySet<ResourceKind> = new Set<ResourceKind>([
  'cluster',
  'listener',
  'route',
  'extension',
]);

/** How long a stream's routes may wait for the endpoints of its new clusters to be requested and sent. */
export const DEFAULT_WARMING_HOLD_MS = 5000;

export type HoldOutcome = 'delivered' | 'expired';

export class WarmingHold {
  /** Clusters introduced on this stream whose CLA has not been sent on it yet. */
  private readonly awaited = new Set<string>();
  private timer?: NodeJS.Timeout;

  /**
   * @param delivered whether the stream has sent the CLA of a cluster (or the cluster is gone).
   * @param release continues the held push (called once per hold, never from inside `await`).
   * @param changed told when a hold starts (true) and when it ends, however it ends (false).
   */
  constructor(
    private readonly limitMs: number,
    private readonly delivered: (cluster: string) => boolean,
    private readonly release: (outcome: HoldOutcome) => void,
    private readonly changed: (active: boolean) => void = () => {},
  ) {}

  get active(): boolean {
    return this.timer !== undefined;
  }

  /** Whether a response of `kind` must wait now. */
  holds(kind: ResourceKind): boolean {
    return this.timer !== undefined && HELD_KINDS.has(kind);
  }

  /**
   * After the cluster and endpoint step of a push: start (or go on) waiting while any introduced
   * cluster, from this push or from a hold still running, lacks its CLA. Returns whether to wait.
   * A hold that goes on keeps its first deadline, so frequent pushes cannot postpone routes.
   */
  await(introduced: readonly string[]): boolean {
    // The common push (no new cluster, no hold running), once per stream of thousands: no work.
    if (introduced.length === 0 && this.timer === undefined) return false;
    for (const c of introduced) this.awaited.add(c);
    this.settle();
    if (this.awaited.size === 0) {
      this.stop();
      return false;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => this.finish('expired'), this.limitMs);
      this.timer.unref();
      this.changed(true);
    }
    return true;
  }

  /** Endpoints were sent (or clusters went away): release once every awaited CLA is out. */
  progress(): void {
    if (!this.timer) return;
    this.settle();
    if (this.awaited.size === 0) this.finish('delivered');
  }

  /** Ends the hold without continuing (the stream closed). */
  stop(): void {
    const was = this.timer !== undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.awaited.clear();
    if (was) this.changed(false);
  }

  private settle(): void {
    for (const c of this.awaited) if (this.delivered(c)) this.awaited.delete(c);
  }

  private finish(outcome: HoldOutcome): void {
    this.stop();
    this.release(outcome);
  }
}
