/**
 * The REST polling state machine, beside the SotW and delta ones: one subscription of a node (a
 * type, and for EDS/RDS/SDS one set of names), and what each poll and each new version means for
 * it. REST has no ACK and no NACK: a poll carries the version the proxy holds, so an ACK is a poll
 * reporting the version last sent, a rejection is a poll still reporting the version before it
 * (Envoy keeps its last good config), and a poll reporting no version after one was accepted, or
 * as the first poll of a new connection, is a proxy that restarted. The REST server
 * (rest/rest-server.ts) holds the sockets and the timers; the decisions are made here.
 */
import type { ResourceKind } from '../xds/resource-types.ts';

export interface PollSubscription {
  readonly kind: ResourceKind;
  /** Version of the last 200 answer. */
  sent?: string;
  /** The version the proxy last reported holding (after we sent it). */
  acked?: string;
  /** The sent version already taken as rejected (reported once per version). */
  nackedSent?: string;
  /** The connection the last 200 answer went out on. */
  sentOn?: number;
  lastPollAt: number;
}

/** The client connection a poll came on: numbered, with how many polls it carried (this one included). */
export interface PollConnection {
  readonly id: number;
  readonly polls: number;
}

/** What a poll says about the subscription's last answer. */
export type PollEvent =
  /** Nothing new: the first poll, or the same report as before. */
  | { type: 'none' }
  /** The proxy holds the version last sent. */
  | { type: 'acked'; version: string }
  /** A new run of the proxy: what it accepted or refused before describes the earlier run. */
  | { type: 'restarted' }
  /** The proxy still reports the version before the one sent: it refused it (reported once). */
  | { type: 'rejected'; sent: string; reported: string };

/** A new subscription, as a proxy's first poll of it makes it. */
export function newPollSubscription(kind: ResourceKind, now: number): PollSubscription {
  return { kind, lastPollAt: now };
}

/**
 * Reads a poll's reported `version` against the subscription. On `restarted` the caller starts
 * the node's state afresh (a new subscription for this poll). Updates `sub` in place.
 */
export function observePoll(
  sub: PollSubscription,
  version: string,
  connection: PollConnection,
  now: number,
): PollEvent {
  sub.lastPollAt = now;
  if (sub.sent === undefined || version === sub.sent) {
    if (version !== '' && version === sub.sent && sub.acked !== version) {
      sub.acked = version;
      return { type: 'acked', version };
    }
    return { type: 'none' };
  }
  // Envoy never forgets an accepted version while it runs; and a poll without a version that is the
  // first one of a connection other than the one the answer went out on comes from a proxy that
  // restarted (a running proxy's connection pool reuses its connections, and a rejected answer
  // must not be sent again just because the next poll took another of them).
  const restarted = connection.polls === 1 && sub.sentOn !== connection.id;
  if (version === '' && (sub.acked !== undefined || restarted)) return { type: 'restarted' };
  if (version === (sub.acked ?? '') && sub.nackedSent !== sub.sent) {
    sub.nackedSent = sub.sent;
    return { type: 'rejected', sent: sub.sent, reported: version };
  }
  return { type: 'none' };
}

/**
 * What to do with a poll reporting `reported` while the subscription's selection is `selected`:
 * answer it now, or treat it as unchanged (hold it, or 304). A version the proxy refused is not
 * sent again until the next change.
 */
export function pollAnswer(sub: PollSubscription, reported: string, selected: string): 'send' | 'unchanged' {
  const refused = sub.nackedSent === selected && reported === (sub.acked ?? '');
  return !refused && (reported === '' || reported !== selected) ? 'send' : 'unchanged';
}

/** Whether a new config releases a poll held at `held` with the selection `selected`. */
export function releasesHeld(sub: PollSubscription, held: string, selected: string): boolean {
  return selected !== held && selected !== sub.nackedSent;
}

/** A 200 answer went out: the subscription now waits for the proxy to report `version`. */
export function answered(sub: PollSubscription, version: string, connectionId: number): void {
  sub.sent = version;
  sub.sentOn = connectionId;
}

/** Whether the subscription is waiting for the proxy to report what it was sent. */
export function awaitingReport(sub: PollSubscription): boolean {
  return sub.sent !== undefined && sub.acked !== sub.sent;
}
