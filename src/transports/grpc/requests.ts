/**
 * Discovery requests decoded for the state machines, with the real Envoy protos, reading no more
 * than a request needs: the node only on a stream's first request, and the names a SotW request
 * repeats not at all when they are, byte for byte, what the stream is subscribed to (an ACK).
 */
import type protobuf from 'protobufjs';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { messageToJson } from '../../xds/proto-json.ts';
import { DREQ, partitionField, withoutField } from '../../xds/wire.ts';
import type { DeltaRequest } from '../delta-stream.ts';
import type { SotwRequest } from '../sotw-stream.ts';
import type { NodeInput } from '../stream-base.ts';
import { nodeLocality, type NodeLocality } from '../../model/node-groups.ts';
import { userAgentText } from '../../security/node-limits.ts';
import type { Subscription } from '../subscription.ts';

// Decoded protobuf messages as protobufjs gives them (snake_case keys; absent fields may be missing).
interface DecodedNode {
  id?: string;
  cluster?: string;
  metadata?: protobuf.Message;
  user_agent_name?: string;
  user_agent_version?: string;
  user_agent_build_version?: {
    version?: { major_number?: number; minor_number?: number; patch?: number } | null;
  } | null;
  locality?: { region?: string; zone?: string; sub_zone?: string } | null;
}

interface DecodedStatus {
  code?: number;
  message?: string;
}

interface DecodedSotw {
  version_info?: string;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: DecodedStatus | null;
  node?: DecodedNode | null;
}

interface DecodedDelta {
  type_url?: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: DecodedStatus | null;
  node?: DecodedNode | null;
}

function toNode(type: protobuf.Type, n: DecodedNode | null | undefined): NodeInput | undefined {
  if (!n) return undefined;
  const nodeType = type.fields.node?.resolvedType as protobuf.Type;
  const structType = nodeType.fields.metadata?.resolvedType as protobuf.Type;
  return {
    id: n.id || '',
    cluster: n.cluster || '',
    metadata: n.metadata ? (messageToJson(structType, n.metadata) as Record<string, unknown>) : {},
    userAgent: userAgentText(n.user_agent_name, n.user_agent_version, n.user_agent_build_version),
    ...withLocality(nodeLocality(n.locality)),
  };
}

function withLocality(locality: NodeLocality | undefined): { locality?: NodeLocality } {
  return locality ? { locality } : {};
}

function errorDetail(e: DecodedStatus | null | undefined): { code: number; message: string } | null {
  return e ? { code: e.code ?? 0, message: e.message ?? '' } : null;
}

/** DiscoveryRequest -> the plain shape the state machine uses (node metadata as JSON). */
function toSotwRequest(type: protobuf.Type, msg: protobuf.Message): SotwRequest {
  const m = msg as DecodedSotw;
  return {
    version_info: m.version_info || '',
    resource_names: m.resource_names ?? [],
    type_url: m.type_url || '',
    response_nonce: m.response_nonce || '',
    error_detail: errorDetail(m.error_detail),
    node: toNode(type, m.node),
  };
}

function toDeltaRequest(type: protobuf.Type, msg: protobuf.Message): DeltaRequest {
  const m = msg as DecodedDelta;
  return {
    type_url: m.type_url || '',
    resource_names_subscribe: m.resource_names_subscribe ?? [],
    resource_names_unsubscribe: m.resource_names_unsubscribe ?? [],
    initial_resource_versions: m.initial_resource_versions ?? {},
    response_nonce: m.response_nonce || '',
    error_detail: errorDetail(m.error_detail),
    node: toNode(type, m.node),
  };
}

/** What a request that does not decode (or cannot even be scanned) ends its stream with. */
function readable<T>(type: protobuf.Type, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new FleetError(ErrorCodes.BAD_REQUEST, `cannot decode the ${type.name}: ${(err as Error).message}`);
  }
}

/**
 * Envoy sends its whole Node on every request unless its bootstrap sets
 * set_node_on_first_message_only (ours do): its metadata, build version and every extension it was
 * built with, many times the size of the rest of a request and far more costly to decode. Only a
 * stream's first request is read for it (ensureStarted), so once the stream is registered the node
 * is cut out unread.
 */
const nodeless = (type: protobuf.Type, bytes: Uint8Array, withNode: boolean) =>
  withNode ? bytes : withoutField(bytes, type.fields.node!.id);

/**
 * A DiscoveryRequest. Envoy repeats every name of a subscription in each request, ACKs included:
 * a large EDS subscription makes every ACK costly to decode. They are compared as bytes with the
 * subscription's own encoding (`subscriptionOf`: the stream's, by type URL) and, when equal, taken
 * from it: the state machine sees the very strings it holds.
 */
export function decodeSotwRequest(
  type: protobuf.Type,
  bytes: Uint8Array,
  withNode: boolean,
  subscriptionOf: (typeUrl: string) => Subscription | undefined,
): SotwRequest {
  return readable(type, () => sotwRequest(type, bytes, withNode, subscriptionOf));
}

/** Requests from this size on are scanned for repeated names (a request of 32 names is about 800 bytes). */
const SCAN_FROM = 512;

function sotwRequest(
  type: protobuf.Type,
  bytes: Uint8Array,
  withNode: boolean,
  subscriptionOf: (typeUrl: string) => Subscription | undefined,
): SotwRequest {
  // A small request decodes faster whole than scanned, then decoded in two.
  if (bytes.length < SCAN_FROM) return toSotwRequest(type, type.decode(nodeless(type, bytes, withNode)));
  // The names first: what is left to scan for the node is then a few fields.
  const { rest, cut } = partitionField(bytes, DREQ.resourceNames);
  const req = toSotwRequest(type, type.decode(nodeless(type, rest, withNode)));
  if (cut.length) {
    const sub = subscriptionOf(req.type_url ?? '');
    const same = sub?.encodedNames();
    req.resource_names =
      same && Buffer.compare(same, cut) === 0
        ? sub!.orderedNames()
        : ((type.decode(cut) as unknown as { resource_names: string[] }).resource_names ?? []);
  }
  return req;
}

export function decodeDeltaRequest(type: protobuf.Type, bytes: Uint8Array, withNode: boolean): DeltaRequest {
  return readable(type, () => toDeltaRequest(type, type.decode(nodeless(type, bytes, withNode))));
}
