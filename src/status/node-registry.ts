/**
 * Who is connected and what each node was sent, ACKed and NACKed, per type. Transports report
 * into it; the admin API reads it. In memory (thousands of nodes ACK on every push; writing each
 * ACK to SQLite would be the bottleneck). Every NACK is also handed to `onNack`, marked when it is
 * one to persist and log.
 */
import type { ClientCertificate } from '../security/node-identity.ts';
import type { NodeIdentity, NodeLocality } from '../model/node-groups.ts';

/** A node as its status entry knows it: what rollout stages and locality variants are chosen by (not its metadata). */
export function statusNode(s: Pick<StreamStatus, 'nodeId' | 'nodeCluster' | 'locality'>): NodeIdentity {
  return { id: s.nodeId, cluster: s.nodeCluster, metadata: {}, ...(s.locality && { locality: s.locality }) };
}

export interface TypeStatus {
  sentVersion?: string;
  sentNonce?: string;
  sentAt?: string;
  ackedVersion?: string;
  ackedAt?: string;
  /** `repeats`: how many more times the same NACK came back (reported once). */
  lastNack?: { version: string; nonce: string; code: number; message: string; at: string; repeats?: number };
}

export interface StreamStatus {
  streamId: number;
  /** REST pollers have no stream: one entry per node, last poll time per type. */
  lastSeenAt?: string;
  nodeId: string;
  nodeCluster: string;
  /** Where the node says it runs (node.locality). */
  locality?: NodeLocality;
  group: string;
  /** During a staged rollout: the rollout stage the node is in. */
  stage?: string;
  transport: string;
  peer: string;
  userAgent: string;
  /** The client certificate the connection was verified with (mTLS). */
  clientCertificate?: ClientCertificate;
  /**
   * Whether the transport authenticated the node: a client certificate bound to the claimed node
   * id, or a REST bearer token. Rollout gates and NACK halts count only such nodes by default.
   */
  authenticated: boolean;
  connectedAt: string;
  disconnectedAt?: string;
  /** Since when the stream's listeners and routes wait for the endpoints of new clusters (warming hold). */
  warmingSince?: string;
  /** Since when the stream has not taken its last response: it gets the newest version once it does. */
  behindSince?: string;
  types: Record<string, TypeStatus>;
}

/** What a stream can be waiting for, besides its client's reply. */
export type StreamWait = 'warming' | 'behind';

export interface NackReport {
  stream: StreamStatus;
  typeUrl: string;
  version: string;
  nonce: string;
  code: number;
  message: string;
  at: string;
  /**
   * Whether to store and log it: the first NACK of this node, type and version, within the node's
   * budget. Every NACK is handed on all the same: a rollout's gates must see each one.
   */
  report: boolean;
}

export interface RegistryObserver {
  sent(typeUrl: string): void;
  acked(typeUrl: string, version: string): void;
  nacked(typeUrl: string): void;
  /** A stream's routes waited for the endpoints of new clusters: until they were sent, or in vain. */
  warmingHeld?(outcome: 'delivered' | 'expired'): void;
}

/**
 * What an xDS stream reports about itself. The NodeRegistry implements it in the thread that
 * holds the fleet's status; a serving thread implements it by relaying each call to that one.
 */
export interface StreamRegistry {
  open(info: Omit<StreamStatus, 'streamId' | 'connectedAt' | 'types'>): StreamStatus;
  close(s: StreamStatus): void;
  /** The node moved to another group or rollout stage (a new config placed it elsewhere). */
  placed(s: StreamStatus, group: string, stage: string | undefined): void;
  sent(s: StreamStatus, typeUrl: string, version: string, nonce: string): void;
  acked(s: StreamStatus, typeUrl: string, version: string): void;
  nacked(s: StreamStatus, typeUrl: string, version: string, nonce: string, code: number, message: string): void;
  holding(s: StreamStatus, typeUrl: string, version: string): void;
  unchanged(s: StreamStatus, typeUrl: string, version: string): void;
  warmingHeld(outcome: 'delivered' | 'expired'): void;
  /** The stream started (`on`) or stopped waiting: for what a warming hold awaits, or for its client to read. */
  waiting(s: StreamStatus, what: StreamWait, on: boolean): void;
}

const MAX_DISCONNECTED = 1000;
/** Envoy truncates its own NACK texts; a client may send megabytes. Kept, logged and stored up to this. */
export const MAX_NACK_MESSAGE = 4096;
/** NACKs reported (stored and logged) per node per minute; more are counted in metrics only. */
export const NACK_REPORTS_PER_MINUTE = 20;
const MAX_NACK_KEYS = 50_000;

/**
 * The time as ISO text, formatted once per millisecond: a push to thousands of streams records a
 * send and an ACK for each, mostly within the same few milliseconds.
 */
let isoAt = 0;
let iso = '';
function nowIso(): string {
  const now = Date.now();
  if (now !== isoAt) {
    isoAt = now;
    iso = new Date(now).toISOString();
  }
  return iso;
}

export function capNackMessage(message: string): string {
  return message.length <= MAX_NACK_MESSAGE
    ? message
    : `${message.slice(0, MAX_NACK_MESSAGE)}… (${message.length - MAX_NACK_MESSAGE} more characters not kept)`;
}
const MAX_POLLERS = 100_000;

export class NodeRegistry implements StreamRegistry {
  private nextId = 1;
  private readonly live = new Map<number, StreamStatus>();
  private readonly pollers = new Map<string, StreamStatus>();
  /** Recently closed streams, oldest first, so status still shows who went away. */
  private readonly gone: StreamStatus[] = [];

  private observers: RegistryObserver[] = [];
  /** (node, type, version) already reported: a NACK is stored and logged once. */
  private readonly reportedNacks = new Set<string>();
  private readonly nackBudget = new Map<string, { minute: number; used: number }>();

  constructor(private readonly onNack: (r: NackReport) => void = () => {}) {}

  /** Metrics and other listeners of send/ACK/NACK events. */
  observe(o: RegistryObserver): void {
    this.observers.push(o);
  }

  open(info: Omit<StreamStatus, 'streamId' | 'connectedAt' | 'types'>): StreamStatus {
    const s: StreamStatus = { ...info, streamId: this.nextId++, connectedAt: nowIso(), types: {} };
    this.live.set(s.streamId, s);
    return s;
  }

  close(s: StreamStatus): void {
    if (this.live.delete(s.streamId)) this.retire(s);
  }

  /** Into the recently disconnected list, so status still shows who went away. */
  private retire(s: StreamStatus): void {
    s.disconnectedAt = nowIso();
    this.gone.push(s);
    if (this.gone.length > MAX_DISCONNECTED) this.gone.shift();
  }

  placed(s: StreamStatus, group: string, stage: string | undefined): void {
    s.group = group;
    s.stage = stage;
  }

  private type(s: StreamStatus, typeUrl: string): TypeStatus {
    return (s.types[typeUrl] ??= {});
  }

  sent(s: StreamStatus, typeUrl: string, version: string, nonce: string): void {
    const t = this.type(s, typeUrl);
    t.sentVersion = version;
    t.sentNonce = nonce;
    t.sentAt = nowIso();
    for (const o of this.observers) o.sent(typeUrl);
  }

  acked(s: StreamStatus, typeUrl: string, version: string): void {
    const t = this.type(s, typeUrl);
    t.ackedVersion = version;
    t.ackedAt = nowIso();
    for (const o of this.observers) o.acked(typeUrl, version);
  }

  warmingHeld(outcome: 'delivered' | 'expired'): void {
    for (const o of this.observers) o.warmingHeld?.(outcome);
  }

  waiting(s: StreamStatus, what: StreamWait, on: boolean): void {
    const field = what === 'warming' ? 'warmingSince' : 'behindSince';
    if (on) s[field] ??= nowIso();
    else delete s[field];
  }

  /**
   * A new version of the type changed nothing this client subscribes to (another cluster's
   * endpoints, an API listener a wildcard client does not get): no response is sent, and a client
   * that had ACKed its last response now holds the new version too. Not an ACK (metrics unchanged).
   */
  /** A client that reconnected holding `version` (nothing was resent): it has it, as if ACKed. */
  holding(s: StreamStatus, typeUrl: string, version: string): void {
    Object.assign(this.type(s, typeUrl), {
      sentVersion: version,
      ackedVersion: version,
      ackedAt: nowIso(),
    });
  }

  unchanged(s: StreamStatus, typeUrl: string, version: string): void {
    const t = s.types[typeUrl];
    if (t?.sentVersion === undefined || t.ackedVersion !== t.sentVersion) return;
    t.sentVersion = version;
    t.ackedVersion = version;
  }

  /**
   * A NACK: shown in the node's status always; handed on always; to be reported (stored, logged)
   * once per node, type and version, with the message capped, and at most NACK_REPORTS_PER_MINUTE
   * per node, so a client repeating a huge NACK costs neither disk nor log nor memory.
   */
  nacked(s: StreamStatus, typeUrl: string, version: string, nonce: string, code: number, message: string): void {
    const at = nowIso();
    const kept = capNackMessage(message);
    const t = this.type(s, typeUrl);
    const repeat = t.lastNack?.version === version && t.lastNack.message === kept;
    t.lastNack = { version, nonce, code, message: kept, at, repeats: repeat ? (t.lastNack!.repeats ?? 0) + 1 : 0 };
    for (const o of this.observers) o.nacked(typeUrl);
    const key = `${s.nodeId}\u0000${typeUrl}\u0000${version}`;
    const report = !this.reportedNacks.has(key) && this.takeNackToken(s.nodeId);
    if (report) {
      if (this.reportedNacks.size >= MAX_NACK_KEYS)
        this.reportedNacks.delete(this.reportedNacks.values().next().value as string);
      this.reportedNacks.add(key);
    }
    this.onNack({ stream: s, typeUrl, version, nonce, code, message: kept, at, report });
  }

  private takeNackToken(nodeId: string): boolean {
    const minute = Math.floor(Date.now() / 60_000);
    const b = this.nackBudget.get(nodeId);
    if (!b || b.minute !== minute) {
      if (this.nackBudget.size >= MAX_NACK_KEYS) this.nackBudget.clear();
      this.nackBudget.set(nodeId, { minute, used: 1 });
      return true;
    }
    return ++b.used <= NACK_REPORTS_PER_MINUTE;
  }

  /** The status entry of a REST-polling node (created on its first poll). */
  poller(info: Omit<StreamStatus, 'streamId' | 'connectedAt' | 'types'>): StreamStatus {
    let s = this.pollers.get(info.nodeId);
    if (!s) {
      s = { ...info, streamId: this.nextId++, connectedAt: nowIso(), types: {} };
      this.pollers.set(info.nodeId, s);
      if (this.pollers.size > MAX_POLLERS) this.pollers.delete(this.pollers.keys().next().value as string);
    }
    Object.assign(s, {
      group: info.group,
      peer: info.peer,
      userAgent: info.userAgent,
      clientCertificate: info.clientCertificate,
      authenticated: info.authenticated,
      nodeCluster: info.nodeCluster,
      locality: info.locality,
      lastSeenAt: nowIso(),
    });
    return s;
  }

  /**
   * A REST proxy restarted under the same node id: what it NACKed before describes the earlier
   * run (the NACK log keeps it), not this one.
   */
  newRun(s: StreamStatus): void {
    s.types = {};
    s.connectedAt = nowIso();
  }

  /** A REST proxy stopped polling: it moves to the recently disconnected list. */
  expirePoller(s: StreamStatus): void {
    if (this.pollers.get(s.nodeId) !== s) return;
    this.pollers.delete(s.nodeId);
    this.retire(s);
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
