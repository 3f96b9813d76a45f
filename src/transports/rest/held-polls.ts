/**
 * Long polls held until a change or their deadline. Thousands are held at once, so a held poll is
 * a record, its timer and what the HTTP server keeps for the open request: no promise, no closure.
 */
import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { NodeIdentity } from '../../model/node-groups.ts';
import type { ConfigSourceVariant } from '../../snapshot/config-sources.ts';
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import type { StreamStatus } from '../../status/node-registry.ts';
import type { ResourceKind } from '../../xds/resource-types.ts';
import type { PollSubscription } from '../rest-poll.ts';
import type { Selection } from './selections.ts';

export interface HeldPoll {
  node: NodeIdentity;
  status: StreamStatus;
  kind: ResourceKind;
  names: string[];
  variant: ConfigSourceVariant;
  version: string;
  sub: PollSubscription;
  reply: FastifyReply;
  timer?: NodeJS.Timeout;
}

/** What releases a held poll with a 200: the type snapshot and the selection it now gets. */
export interface Change {
  t: TypeSnapshot;
  sel: Selection;
}

/** A held poll's deadline: a module function and arguments, so no closure is kept per poll. */
function expire(polls: HeldPolls, h: HeldPoll): void {
  polls.answer(h);
}

export class HeldPolls {
  private readonly held = new Map<ServerResponse, HeldPoll>();
  /** One listener for every held poll: the proxy went away (or its connection did) while held. */
  private readonly onClose: (this: ServerResponse) => void;

  /** `send` answers a released poll with its change (a 200); without one it is a 304. */
  constructor(private readonly send: (h: HeldPoll, change: Change) => void) {
    const held = this.held;
    this.onClose = function (this: ServerResponse) {
      const h = held.get(this);
      if (h) {
        held.delete(this);
        clearTimeout(h.timer);
      }
    };
  }

  get size(): number {
    return this.held.size;
  }

  /** Holds a poll until `answer` is called for it, or `holdMs` passes (then a 304). */
  hold(h: HeldPoll, holdMs: number): void {
    h.timer = setTimeout(expire, holdMs, this, h);
    this.held.set(h.reply.raw, h);
    h.reply.raw.once('close', this.onClose);
  }

  /** Answers a held poll: with its change (200), else 304; not if its client went away. */
  answer(h: HeldPoll, change?: Change): void {
    clearTimeout(h.timer);
    this.held.delete(h.reply.raw);
    h.reply.raw.off('close', this.onClose);
    if (h.reply.sent || h.reply.raw.destroyed) return;
    if (change) this.send(h, change);
    else h.reply.code(304).send();
  }

  /** Every held poll, as a list that answering does not disturb. */
  list(): HeldPoll[] {
    return [...this.held.values()];
  }

  /** Answers every held poll with 304 (on shutdown). */
  releaseAll(): void {
    for (const h of this.list()) this.answer(h);
  }
}
