/**
 * Who is connected and what each node was sent, ACKed and NACKed, per type. Transports report
 * into it; the admin API reads it. In memory (thousands of nodes ACK on every push; writing each
 * ACK to SQLite would be the bottleneck). NACKs are also handed to `onNack` to be persisted.
 */
export interface TypeStatus {
  sentVersion?: string;
  sentNonce?: string;
  sentAt?: string;
  ackedVersion?: string;
  ackedAt?: string;
  lastNack?: { version: string; nonce: string; code: number; message: string; at: string };
}

export interface StreamStatus {
  streamId: number;
  /** REST pollers have no stream: one entry per node, last poll time per type. */
  lastSeenAt?: string;
  nodeId: string;
  nodeCluster: string;
  group: string;
  transport: string;
  peer: string;
  userAgent: string;
  connectedAt: string;
  disconnectedAt?: string;
  types: Record<string, TypeStatus>;
}

export interface NackReport {
  stream: StreamStatus;
  typeUrl: string;
  version: string;
  nonce: string;
  code: number;
  message: string;
  at: string;
}

export interface RegistryObserver {
  sent(typeUrl: string): void;
  acked(typeUrl: string, version: string): void;
  nacked(typeUrl: string): void;
}

const MAX_DISCONNECTED = 1000;
const MAX_POLLERS = 100_000;

export class NodeRegistry {
  private nextId = 1;
  private readonly live = new Map<number, StreamStatus>();
  private readonly pollers = new Map<string, StreamStatus>();
  /** Recently closed streams, oldest first, so status still shows who went away. */
  private readonly gone: StreamStatus[] = [];

  private observers: RegistryObserver[] = [];

  constructor(private readonly onNack: (r: NackReport) => void = () => {}) {}

  /** Metrics and other listeners of send/ACK/NACK events. */
  observe(o: RegistryObserver): void {
    this.observers.push(o);
  }

  open(info: Omit<StreamStatus, 'streamId' | 'connectedAt' | 'types'>): StreamStatus {
    const s: StreamStatus = { ...info, streamId: this.nextId++, connectedAt: new Date().toISOString(), types: {} };
    this.live.set(s.streamId, s);
    return s;
  }

  close(s: StreamStatus): void {
    if (!this.live.delete(s.streamId)) return;
    s.disconnectedAt = new Date().toISOString();
    this.gone.push(s);
    if (this.gone.length > MAX_DISCONNECTED) this.gone.shift();
  }

  private type(s: StreamStatus, typeUrl: string): TypeStatus {
    return (s.types[typeUrl] ??= {});
  }

  sent(s: StreamStatus, typeUrl: string, version: string, nonce: string): void {
    Object.assign(this.type(s, typeUrl), { sentVersion: version, sentNonce: nonce, sentAt: new Date().toISOString() });
    for (const o of this.observers) o.sent(typeUrl);
  }

  acked(s: StreamStatus, typeUrl: string, version: string): void {
    Object.assign(this.type(s, typeUrl), { ackedVersion: version, ackedAt: new Date().toISOString() });
    for (const o of this.observers) o.acked(typeUrl, version);
  }

  /**
   * A new version of the type changed nothing this client subscribes to (another cluster's
   * endpoints, an API listener a wildcard client does not get): no response is sent, and a client
   * that had ACKed its last response now holds the new version too. Not an ACK (metrics unchanged).
   */
  unchanged(s: StreamStatus, typeUrl: string, version: string): void {
    const t = s.types[typeUrl];
    if (t?.sentVersion === undefined || t.ackedVersion !== t.sentVersion) return;
    t.sentVersion = version;
    t.ackedVersion = version;
  }

  nacked(s: StreamStatus, typeUrl: string, version: string, nonce: string, code: number, message: string): void {
    const at = new Date().toISOString();
    this.type(s, typeUrl).lastNack = { version, nonce, code, message, at };
    this.onNack({ stream: s, typeUrl, version, nonce, code, message, at });
    for (const o of this.observers) o.nacked(typeUrl);
  }

  /** The status entry of a REST-polling node (created on its first poll). */
  poller(info: Omit<StreamStatus, 'streamId' | 'connectedAt' | 'types'>): StreamStatus {
    let s = this.pollers.get(info.nodeId);
    if (!s) {
      s = { ...info, streamId: this.nextId++, connectedAt: new Date().toISOString(), types: {} };
      this.pollers.set(info.nodeId, s);
      if (this.pollers.size > MAX_POLLERS) this.pollers.delete(this.pollers.keys().next().value as string);
    }
    Object.assign(s, { group: info.group, peer: info.peer, userAgent: info.userAgent, nodeCluster: info.nodeCluster, lastSeenAt: new Date().toISOString() });
    return s;
  }

  /**
   * A REST proxy restarted under the same node id: what it NACKed before describes the earlier
   * run (the NACK log keeps it), not this one.
   */
  newRun(s: StreamStatus): void {
    s.types = {};
    s.connectedAt = new Date().toISOString();
  }

  /** A REST proxy stopped polling: it moves to the recently disconnected list. */
  expirePoller(s: StreamStatus): void {
    if (this.pollers.get(s.nodeId) !== s) return;
    this.pollers.delete(s.nodeId);
    s.disconnectedAt = new Date().toISOString();
    this.gone.push(s);
    if (this.gone.length > MAX_DISCONNECTED) this.gone.shift();
  }

  connected(): StreamStatus[] {
    return [...this.live.values()];
  }

  polling(): StreamStatus[] {
    return [...this.pollers.values()];
  }

  recentlyDisconnected(): StreamStatus[] {
    return [...this.gone].reverse();
  }

  byNodeId(id: string): StreamStatus[] {
    return [...this.live.values(), ...this.pollers.values(), ...this.gone].filter((s) => s.nodeId === id);
  }
}
