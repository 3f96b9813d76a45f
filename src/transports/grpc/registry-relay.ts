/**
 * Fleet status from serving threads. A stream in a serving thread reports to a RelayRegistry,
 * which queues each call and posts the queue once per turn of the thread's event loop (a push to
 * thousands of streams is one message of their sends, and one of their ACKs); the main thread
 * replays the calls on the one NodeRegistry, which the status API, metrics, rollouts and the NACK
 * log read. NACK containment learns from every thread the same way (see `RelayedAcks`).
 */
import type { NodeRegistry, StreamRegistry, StreamStatus, StreamWait } from '../../status/node-registry.ts';
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import type { ResourceKind } from '../../xds/resource-types.ts';
import { GroupAckTracker } from '../group-ack-tracker.ts';

type OpenInfo = Omit<StreamStatus, 'streamId' | 'connectedAt' | 'types'>;

/** One StreamRegistry call (by the thread's own stream id), or one NACK-containment fact. */
export type RelayedEvent =
  | readonly ['open', number, OpenInfo]
  | readonly ['close', number]
  | readonly ['placed', number, string, string | undefined]
  | readonly ['sent', number, string, string, string]
  | readonly ['acked', number, string, string]
  | readonly ['nacked', number, string, string, string, number, string]
  | readonly ['holding', number, string, string]
  | readonly ['unchanged', number, string, string]
  | readonly ['warming', 'delivered' | 'expired']
  | readonly ['waiting', number, StreamWait, boolean]
  | readonly ['group-acked', string, ResourceKind, string]
  | readonly ['group-nacked', string, ResourceKind, string];

/** Serving thread: records what its streams report and hands it on in batches. */
export class RelayRegistry implements StreamRegistry {
  private nextId = 1;
  private queue: RelayedEvent[] = [];
  private scheduled = false;

  constructor(private readonly post: (events: RelayedEvent[]) => void) {}

  push(e: RelayedEvent): void {
    this.queue.push(e);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  flush(): void {
    this.scheduled = false;
    if (!this.queue.length) return;
    const events = this.queue;
    this.queue = [];
    this.post(events);
  }

  open(info: OpenInfo): StreamStatus {
    const s: StreamStatus = { ...info, streamId: this.nextId++, connectedAt: '', types: {} };
    this.push(['open', s.streamId, info]);
    return s;
  }

  close(s: StreamStatus): void {
    this.push(['close', s.streamId]);
  }

  placed(s: StreamStatus, group: string, stage: string | undefined): void {
    s.group = group;
    s.stage = stage;
    this.push(['placed', s.streamId, group, stage]);
  }

  sent(s: StreamStatus, typeUrl: string, version: string, nonce: string): void {
    this.push(['sent', s.streamId, typeUrl, version, nonce]);
  }

  acked(s: StreamStatus, typeUrl: string, version: string): void {
    this.push(['acked', s.streamId, typeUrl, version]);
  }

  nacked(s: StreamStatus, typeUrl: string, version: string, nonce: string, code: number, message: string): void {
    this.push(['nacked', s.streamId, typeUrl, version, nonce, code, message]);
  }

  holding(s: StreamStatus, typeUrl: string, version: string): void {
    this.push(['holding', s.streamId, typeUrl, version]);
  }

  unchanged(s: StreamStatus, typeUrl: string, version: string): void {
    this.push(['unchanged', s.streamId, typeUrl, version]);
  }

  warmingHeld(outcome: 'delivered' | 'expired'): void {
    this.push(['warming', outcome]);
  }

  waiting(s: StreamStatus, what: StreamWait, on: boolean): void {
    this.push(['waiting', s.streamId, what, on]);
  }
}

/**
 * Serving thread: NACK containment that also tells the other threads what this one's streams
 * ACKed and NACKed, and learns what theirs did (`learn`). A group's proxies spread over threads,
 * and the policy is about the group.
 */
export class RelayedAcks extends GroupAckTracker {
  constructor(
    serveLastAcked: boolean,
    private readonly relay: RelayRegistry,
    /** The thread's type snapshot of that kind and version, if it still holds it. */
    private readonly typeOf: (kind: ResourceKind, version: string) => TypeSnapshot | undefined,
  ) {
    super(serveLastAcked);
  }

  // Told to the other threads only when the policy is on: otherwise nothing reads them.
  override acked(group: string, t: TypeSnapshot): void {
    super.acked(group, t);
    if (this.serveLastAckedToNewNodes) this.relay.push(['group-acked', group, t.kind, t.version]);
  }

  override nacked(group: string, kind: ResourceKind, version: string): void {
    super.nacked(group, kind, version);
    if (this.serveLastAckedToNewNodes) this.relay.push(['group-nacked', group, kind, version]);
  }

  /** What another thread's streams replied. */
  learn(e: RelayedEvent): void {
    if (e[0] === 'group-nacked') super.nacked(e[1], e[2], e[3]);
    if (e[0] !== 'group-acked') return;
    const t = this.typeOf(e[2], e[3]);
    if (t) super.acked(e[1], t);
  }
}

/**
 * Main thread: replays one serving thread's events on the registry. Returns the containment
 * facts, for the other threads.
 */
export class RelayedStreams {
  private readonly streams = new Map<number, StreamStatus>();

  constructor(private readonly registry: NodeRegistry) {}

  get size(): number {
    return this.streams.size;
  }

  apply(events: readonly RelayedEvent[]): RelayedEvent[] {
    const facts: RelayedEvent[] = [];
    for (const e of events) {
      if (e[0] === 'group-acked' || e[0] === 'group-nacked') {
        facts.push(e);
        continue;
      }
      if (e[0] === 'warming') {
        this.registry.warmingHeld(e[1]);
        continue;
      }
      if (e[0] === 'open') {
        this.streams.set(e[1], this.registry.open(e[2]));
        continue;
      }
      const s = this.streams.get(e[1]);
      if (!s) continue;
      switch (e[0]) {
        case 'close':
          this.streams.delete(e[1]);
          this.registry.close(s);
          break;
        case 'placed':
          this.registry.placed(s, e[2], e[3]);
          break;
        case 'sent':
          this.registry.sent(s, e[2], e[3], e[4]);
          break;
        case 'acked':
          this.registry.acked(s, e[2], e[3]);
          break;
        case 'nacked':
          this.registry.nacked(s, e[2], e[3], e[4], e[5], e[6]);
          break;
        case 'holding':
          this.registry.holding(s, e[2], e[3]);
          break;
        case 'unchanged':
          this.registry.unchanged(s, e[2], e[3]);
          break;
        case 'waiting':
          this.registry.waiting(s, e[2], e[3]);
          break;
      }
    }
    return facts;
  }

  /** The thread is gone: its streams are closed. */
  closeAll(): void {
    for (const s of this.streams.values()) this.registry.close(s);
    this.streams.clear();
  }
}
