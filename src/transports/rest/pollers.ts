/**
 * The nodes polling over REST: per node, one subscription per type and set of names (the state
 * machine is rest-poll.ts), and the client connections polls come on, numbered. One registry per
 * REST server: nothing here is shared between servers.
 */
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import type { NodeRegistry, StreamStatus } from '../../status/node-registry.ts';
import { TypeUrls, type ResourceKind } from '../../xds/resource-types.ts';
import { recordReply, type ReplySinks } from '../replies.ts';
import { awaitingReport, newPollSubscription, observePoll, type PollSubscription } from '../rest-poll.ts';

/** Subscriptions kept per node: names come from the client, so their count is bounded. */
export const MAX_SUBSCRIPTIONS_PER_NODE = 20_000;

interface Connection {
  id: number;
  /** Polls it carried so far. */
  polls: number;
}

export class Pollers {
  private readonly subscriptions = new Map<StreamStatus, Map<string, PollSubscription>>();
  private readonly connections = new WeakMap<object, Connection>();
  private nextConnectionId = 1;

  constructor(private readonly sinks: ReplySinks & { registry: NodeRegistry }) {}

  /** A client connection, numbered: a proxy that restarted polls over connections it just opened. */
  connection(socket: object): Connection {
    let c = this.connections.get(socket);
    if (!c) this.connections.set(socket, (c = { id: this.nextConnectionId++, polls: 0 }));
    return c;
  }

  /** Reads what a poll's version says about the subscription's last answer (ACK, inferred NACK, restart). */
  observe(status: StreamStatus, kind: ResourceKind, key: string, version: string, socket: object): PollSubscription {
    const subs = this.subscriptionsOf(status);
    let sub = subs.get(key);
    if (!sub) {
      if (subs.size >= MAX_SUBSCRIPTIONS_PER_NODE) subs.delete(subs.keys().next().value as string);
      subs.set(key, (sub = newPollSubscription(kind, 0)));
    }
    const connection = this.connection(socket);
    connection.polls++;
    const event = observePoll(sub, version, connection, Date.now());
    if (event.type === 'restarted') {
      // A new run of the proxy, not a rejection.
      this.sinks.registry.newRun(status);
      subs.clear();
      subs.set(key, (sub = newPollSubscription(kind, Date.now())));
    } else if (event.type === 'rejected') {
      const message =
        `inferred: node reports version "${event.reported || '(none)'}" after receiving "${event.sent}"; ` +
        `REST carries no error detail, see the proxy's log ("REST config for ... rejected")`;
      recordReply(this.sinks, status, status.group, {
        kind,
        version: event.sent,
        nonce: '',
        error: { code: 0, message },
      });
    }
    return sub;
  }

  /** The type counts as ACKed at `t` once every subscription of it reports its current selection. */
  maybeAcked(status: StreamStatus, t: TypeSnapshot): void {
    const typeUrl = TypeUrls[t.kind];
    const subs = this.subscriptions.get(status);
    if (!subs || status.types[typeUrl]?.ackedVersion === t.version) return;
    for (const sub of subs.values()) if (sub.kind === t.kind && awaitingReport(sub)) return;
    recordReply(this.sinks, status, status.group, { kind: t.kind, version: t.version, nonce: '', snapshot: t });
  }

  /** Forgets subscriptions not polled since `before` (a removed cluster's EDS), and nodes left with none. */
  expire(before: number): void {
    for (const [status, subs] of this.subscriptions) {
      for (const [key, sub] of subs) if (sub.lastPollAt < before) subs.delete(key);
      if (subs.size === 0) {
        this.subscriptions.delete(status);
        this.sinks.registry.expirePoller(status);
      }
    }
  }

  /** How many nodes are polling (with at least one subscription). */
  get size(): number {
    return this.subscriptions.size;
  }

  private subscriptionsOf(status: StreamStatus): Map<string, PollSubscription> {
    let subs = this.subscriptions.get(status);
    if (!subs) this.subscriptions.set(status, (subs = new Map<string, PollSubscription>()));
    return subs;
  }
}
