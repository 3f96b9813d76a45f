/**
 * gRPC transport: ADS and the per-type SotW services over @grpc/grpc-js. Requests are decoded
 * with the real Envoy protos; responses are pre-assembled bytes (see sotw-stream.ts), so the
 * response serializer is the identity.
 */
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import type protobuf from 'protobufjs';
import type { Logger } from 'pino';
import type { SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import type { StreamRegistry, StreamStatus } from '../../status/node-registry.ts';
import { messageToJson } from '../../xds/proto-json.ts';
import { requestType } from '../../xds/proto-root.ts';
import {
  DELTA_DISCOVERY_REQUEST,
  DISCOVERY_REQUEST,
  RESOURCE_TYPES,
  type ResourceKind,
} from '../../xds/resource-types.ts';
import { SotwStream, type SotwRequest } from '../sotw-stream.ts';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { DeltaStream, type DeltaRequest } from '../delta-stream.ts';
import type { GroupAckTracker } from '../group-ack-tracker.ts';
import { checkNodeIdentity, type PeerCertificateLike } from '../../security/node-identity.ts';
import type { NodeIdentity } from '../../model/node-groups.ts';
import type { NodeInput, StreamBase } from '../stream-base.ts';
import { grpcVariant, xdsClusterName } from '../../snapshot/config-sources.ts';
import { GRPC_XDS_CLUSTER } from '../../bootstrap/config-source.ts';
import { leanWriter } from './lean-writer.ts';
import { withoutField } from '../../xds/wire.ts';

export interface GrpcServerOptions {
  cache: SnapshotCache;
  registry: StreamRegistry;
  log: Logger;
  /** Largest request accepted. Envoy requests naming tens of thousands of resources pass 4 MiB. */
  maxReceiveBytes?: number;
  acks?: GroupAckTracker;
  /** With mTLS: URI SAN prefix binding node ids to client certificates. */
  identityPrefix?: string;
  /** Whether SDS may be served (see secretsAllowed in the settings). */
  secretsAllowed?: boolean;
  /** Responses a stream may have queued unread before it is ended (RESOURCE_EXHAUSTED). */
  maxUnreadBytes?: number;
  /** How long a stream may stay unable to deliver a newer config before it is ended (default 60 s). */
  maxBehindMs?: number;
  /** ADS: longest wait of routes for the endpoints of clusters added with them (warming-hold.ts). */
  warmingHoldMs?: number;
  /** Streams this server serves at most; more are refused with RESOURCE_EXHAUSTED. */
  maxStreams?: number;
  /**
   * Where open streams are counted against maxStreams: by default this server alone. Serving
   * threads each count in their own slot of shared memory and admit while the sum is below the
   * limit, so it holds for the process (threads admitting at the same instant may each pass).
   */
  streamCount?: { readonly slots: Int32Array; readonly slot: number };
  /** Connections older than this (±10%) are asked to go away (GOAWAY), streams ended after the grace. */
  maxConnectionAgeMs?: number;
  maxConnectionAgeGraceMs?: number;
}

/** Enough for several full-state pushes of a large config; a client far behind reconnects. */
export const DEFAULT_MAX_UNREAD_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_BEHIND_MS = 60_000;

interface ServiceSpec {
  service: string;
  method: string;
  kind?: ResourceKind;
  transport: string;
  delta: boolean;
}

const SERVICES: ServiceSpec[] = [
  {
    service: 'envoy.service.discovery.v3.AggregatedDiscoveryService',
    method: 'StreamAggregatedResources',
    transport: 'grpc-ads',
    delta: false,
  },
  {
    service: 'envoy.service.discovery.v3.AggregatedDiscoveryService',
    method: 'DeltaAggregatedResources',
    transport: 'grpc-ads-delta',
    delta: true,
  },
  ...RESOURCE_TYPES.flatMap(({ grpcService: service, grpcNoun: noun, kind, short }) => [
    { service, method: `Stream${noun}`, kind, transport: `grpc-${short}`, delta: false },
    { service, method: `Delta${noun}`, kind, transport: `grpc-${short}-delta`, delta: true },
  ]),
];

// Decoded protobuf messages (protobufjs objects with snake_case keys), read field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a decoded envoy.config.core.v3.Node
function toNode(type: protobuf.Type, n: any): NodeInput | undefined {
  if (!n) return undefined;
  const nodeType = type.fields.node?.resolvedType as protobuf.Type;
  const structType = nodeType.fields.metadata?.resolvedType as protobuf.Type;
  return {
    id: n.id || '',
    cluster: n.cluster || '',
    metadata: n.metadata ? (messageToJson(structType, n.metadata) as Record<string, unknown>) : {},
    userAgent: [n.user_agent_name, n.user_agent_version || ''].filter(Boolean).join('/'),
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a decoded google.rpc.Status
function errorDetail(e: any): { code: number; message: string } | null {
  return e ? { code: e.code ?? 0, message: e.message ?? '' } : null;
}

/** DiscoveryRequest -> the plain shape the state machine uses (node metadata as JSON). */
function toSotwRequest(type: protobuf.Type, msg: protobuf.Message): SotwRequest {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a decoded request message
  const m = msg as unknown as Record<string, any>;
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
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a decoded request message
  const m = msg as unknown as Record<string, any>;
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

/**
 * A request decoded. Envoy sends its whole Node on every request unless its bootstrap sets
 * set_node_on_first_message_only (ours do): Envoy 1.40's is 61 KB (metadata, build version and the
 * 516 extensions it was built with), 129 us to decode per request, where the rest of a CDS request
 * takes under 1 us. Only a stream's first request is read for it (ensureStarted), so once the
 * stream is registered the node is cut out unread.
 */
function decodeRequest(type: protobuf.Type, bytes: Buffer, withNode: boolean): protobuf.Message {
  try {
    return type.decode(withNode ? bytes : withoutField(bytes, type.fields.node!.id));
  } catch (err) {
    throw new FleetError(ErrorCodes.BAD_REQUEST, `cannot decode the ${type.name}: ${(err as Error).message}`);
  }
}

const REAP_EVERY_MS = 10_000;
/** How long the UNAVAILABLE statuses get to go out before a shutdown destroys the connections. */
const STATUS_FLUSH_MS = 50;

export interface GrpcTransport {
  server: grpc.Server;
  /**
   * Ends every open stream with UNAVAILABLE at once (before the promise is returned): Envoy keeps its config and
   * reconnects. Then, once the status frames have gone out, stops the server and its connections, injected ones
   * included. xDS streams never end on their own, so a graceful tryShutdown would only wait.
   */
  close(reason: string): Promise<void>;
}

/** Stream counts for `threads` serving threads (see GrpcServerOptions.streamCount). */
export function sharedStreamSlots(threads: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4 * threads));
}

export function createGrpcServer(opts: GrpcServerOptions): GrpcTransport {
  const maxUnread = opts.maxUnreadBytes ?? DEFAULT_MAX_UNREAD_BYTES;
  const calls = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();
  const { slots, slot } = opts.streamCount ?? { slots: sharedStreamSlots(1), slot: 0 };
  const admit = (call: grpc.ServerDuplexStream<Buffer, Buffer>): boolean => {
    if (opts.maxStreams !== undefined) {
      let open = 0;
      for (let i = 0; i < slots.length; i++) open += Atomics.load(slots, i);
      if (open >= opts.maxStreams) return false;
      Atomics.add(slots, slot, 1);
    }
    calls.add(call);
    return true;
  };
  const release = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    if (calls.delete(call) && opts.maxStreams !== undefined) Atomics.sub(slots, slot, 1);
  };
  const finishers = new Map<grpc.ServerDuplexStream<Buffer, Buffer>, () => void>();
  // Backstop: a stream must be released however it ends, even if no event reaches us for it
  // (reported for streams reset right after their first request): reap cancelled or destroyed calls.
  const reaper = setInterval(() => {
    for (const [call, finish] of finishers) if (call.cancelled || call.destroyed) finish();
  }, REAP_EVERY_MS);
  reaper.unref();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': opts.maxReceiveBytes ?? 16 * 1024 * 1024,
    'grpc.max_send_message_length': -1,
    // Per-type xDS opens a stream per subscription on one connection.
    'grpc.max_concurrent_streams': 100_000,
    // Detect dead peers; Envoy is advised to ping every 30 s, which we must tolerate.
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_timeout_ms': 20_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': 5_000,
    // Rebalancing across replicas: after this age (±10% jitter, applied by grpc-js) a connection
    // gets a GOAWAY, and its streams are ended after the grace period; proxies reconnect, spread
    // over time, through whatever balances them (DNS, their xDS cluster's endpoints).
    ...(opts.maxConnectionAgeMs
      ? {
          'grpc.max_connection_age_ms': opts.maxConnectionAgeMs,
          'grpc.max_connection_age_grace_ms': opts.maxConnectionAgeGraceMs ?? 10_000,
        }
      : {}),
  });
  let warnedCopying = false;
  const debug = opts.log.isLevelEnabled('debug');
  const sotwType = requestType(DISCOVERY_REQUEST);
  const deltaType = requestType(DELTA_DISCOVERY_REQUEST);

  for (const spec of SERVICES) {
    const reqType = spec.delta ? deltaType : sotwType;
    const definition: grpc.ServiceDefinition = {
      [spec.method]: {
        path: `/${spec.service}/${spec.method}`,
        requestStream: true,
        responseStream: true,
        requestSerialize: (v: unknown) => Buffer.from(reqType.encode(v as protobuf.Message).finish()),
        // Decoded by the stream (decodeRequest), which knows whether it still needs the node.
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    };
    server.addService(definition, {
      [spec.method]: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        if (!admit(call)) {
          // Above its share, a replica sheds new streams: the proxy retries and lands on another.
          call.emit('error', {
            code: grpc.status.RESOURCE_EXHAUSTED,
            details: `this fleetxds serves its maximum of ${opts.maxStreams} streams; connect to another replica`,
          });
          return;
        }
        const peer = call.getPeer();
        // A child logger per stream costs its bindings' serialization at every (re)connect; made when one is logged.
        let child: Logger | undefined;
        const log = () => (child ??= opts.log.child({ transport: spec.transport, peer }));
        const write = leanWriter(call);
        if (!write && !warnedCopying) {
          warnedCopying = true;
          opts.log.warn('this grpc-js does not expose its HTTP/2 stream: responses are copied per stream (slower)');
        }
        let unread = 0;
        const prefix = opts.identityPrefix;
        const peerCert = prefix
          ? (
              call as unknown as { getAuthContext?: () => { sslPeerCertificate?: PeerCertificateLike } }
            ).getAuthContext?.()?.sslPeerCertificate
          : undefined;
        const streamOpts = {
          authorize: prefix ? (node: NodeIdentity) => checkNodeIdentity(node, peerCert, prefix) : undefined,
          cache: opts.cache,
          registry: opts.registry,
          acks: opts.acks,
          transport: spec.transport,
          peer,
          fixedKind: spec.kind,
          secretsAllowed: opts.secretsAllowed ?? false,
          onRefusal: (reason: string) => log().warn({ node: stream.streamStatus?.nodeId }, reason),
          // A per-type client has no ADS: point references at the same services over its own xDS
          // cluster, whose name Envoy sends as the :authority.
          variant: spec.kind ? grpcVariant(xdsClusterName(call.getHost(), GRPC_XDS_CLUSTER), spec.delta) : undefined,
          maxBehindMs: opts.maxBehindMs ?? DEFAULT_MAX_BEHIND_MS,
          warmingHoldMs: opts.warmingHoldMs,
          onStuck: (behindMs: number) => {
            log().warn(
              { node: stream.streamStatus?.nodeId, behindMs },
              'client has not read its responses for too long; ending the stream',
            );
            call.emit('error', {
              code: grpc.status.RESOURCE_EXHAUSTED,
              details: `responses unread for ${Math.round(behindMs / 1000)} s; reconnect to get the current state`,
            });
            finish();
          },
          send: (parts: readonly Buffer[], flushed: () => void) => {
            if (!call.writable || call.destroyed) return;
            let length = 0;
            for (const p of parts) length += p.length;
            // A client that does not read must not make us buffer push after push without bound.
            // (The call is an object-mode stream: its writableLength counts messages, so count bytes here.)
            if (unread + length > maxUnread) {
              log().warn(
                { node: stream.streamStatus?.nodeId, unreadBytes: unread },
                'client is not reading its responses; ending the stream',
              );
              call.emit('error', {
                code: grpc.status.RESOURCE_EXHAUSTED,
                details: `more than ${maxUnread} bytes of responses unread; reconnect to get the current state`,
              });
              finish();
              return;
            }
            unread += length;
            const done = () => {
              unread -= length;
              flushed();
            };
            if (write) write(parts, length, done);
            else call.write(parts.length === 1 ? parts[0]! : Buffer.concat(parts), done);
          },
        };
        const stream: StreamBase = spec.delta ? new DeltaStream(streamOpts) : new SotwStream(streamOpts);
        const finish = () => {
          release(call);
          finishers.delete(call);
          const s = stream.streamStatus;
          // Per-stream lines are debug: thousands of proxies reconnecting must not flood (or block on) the log.
          if (s && debug) log().debug({ node: s.nodeId, group: s.group }, 'stream closed');
          stream.close();
        };
        finishers.set(call, finish);
        call.on('data', (bytes: Buffer) => {
          try {
            const opened = stream.streamStatus !== undefined;
            const msg = decodeRequest(reqType, bytes, !opened);
            if (spec.delta) (stream as DeltaStream).handle(toDeltaRequest(reqType, msg));
            else (stream as SotwStream).handle(toSotwRequest(reqType, msg));
            const s = stream.streamStatus as StreamStatus | undefined;
            if (debug && !opened && s) log().debug({ node: s.nodeId, group: s.group }, 'stream opened');
          } catch (err) {
            const code = err instanceof FleetError ? grpc.status[err.grpcStatus] : grpc.status.INTERNAL;
            if (!(err instanceof FleetError)) log().error({ err }, 'stream failed');
            else log().warn({ reason: err.message }, 'protocol error; closing stream');
            call.emit('error', { code, details: (err as Error).message });
            finish();
          }
        });
        call.on('end', () => {
          finish();
          call.end();
        });
        call.on('error', finish);
        call.on('cancelled', finish);
        call.on('close', finish);
      },
    });
  }
  return {
    server,
    async close(reason: string) {
      clearInterval(reaper);
      for (const call of [...calls]) {
        release(call);
        call.emit('error', { code: grpc.status.UNAVAILABLE, details: reason });
      }
      await new Promise((r) => setTimeout(r, STATUS_FLUSH_MS));
      // Closes every listener (the injector's too) and destroys every session: grpc-js tracks sessions for this
      // through channelz, which is on by default (an injector's own destroy() would close them again). Turning
      // channelz off saved about 1% of a reconnect storm's CPU, within the spread of six runs: not worth it.
      server.forceShutdown();
    },
  };
}

/** Server credentials: TLS when configured, with client certificates required when a CA is given. */
export function grpcCredentials(
  tls: { certFile: string; keyFile: string; clientCaFile?: string } | undefined,
): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  const ca = tls.clientCaFile ? readFileSync(tls.clientCaFile) : null;
  return grpc.ServerCredentials.createSsl(
    ca,
    [{ cert_chain: readFileSync(tls.certFile), private_key: readFileSync(tls.keyFile) }],
    Boolean(ca),
  );
}

/** Binds and resolves the actual port (0 picks a free one). */
export function bindGrpc(
  server: grpc.Server,
  address: string,
  credentials = grpc.ServerCredentials.createInsecure(),
): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, port) => (err ? reject(err) : resolve(port)));
  });
}
