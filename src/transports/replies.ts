/**
 * The one place a client's reply to a response (ACK or NACK) is recorded, for every transport:
 * SotW and delta streams read it from the request's nonce and error_detail; REST infers it from
 * the version a proxy polls with (docs/xds-protocol.md REST-07). The node registry keeps it for the
 * status API and metrics; NACK containment learns which snapshot a group accepted or refused.
 */
import type { TypeSnapshot } from '../snapshot/group-snapshot.ts';
import type { StreamRegistry, StreamStatus } from '../status/node-registry.ts';
import { TypeUrls, type ResourceKind } from '../xds/resource-types.ts';
import type { GroupAckTracker } from './group-ack-tracker.ts';

export interface Reply {
  kind: ResourceKind;
  /** The version the reply is about: what the client says it holds (ACK) or was sent (NACK). */
  version: string;
  /** Nonce of the response replied to ('' for REST, which has none). */
  nonce: string;
  /**
   * The type snapshot the answered response was cut from, when the transport knows it: only then
   * does NACK containment learn from the reply (an ACK counts only for the version that was sent).
   */
  snapshot?: TypeSnapshot;
  /** Set for a NACK. */
  error?: { code: number; message: string };
}

export interface ReplySinks {
  registry: StreamRegistry;
  acks?: GroupAckTracker;
}

export function recordReply(to: ReplySinks, status: StreamStatus, group: string, r: Reply): void {
  const typeUrl = TypeUrls[r.kind];
  if (r.error) {
    to.registry.nacked(status, typeUrl, r.version, r.nonce, r.error.code, r.error.message);
    if (r.snapshot) to.acks?.nacked(group, r.kind, r.snapshot.version);
    return;
  }
  to.registry.acked(status, typeUrl, r.version);
  if (r.snapshot && r.snapshot.version === r.version) to.acks?.acked(group, r.snapshot);
}
