/**
 * gRPC transport: ADS and the per-type xDS services (SotW and delta) on call-server.ts. Requests
 * are decoded with the real Envoy protos; responses are pre-assembled bytes (see sotw-stream.ts),
 * written as they are.
 */
import type { Logger } from 'pino';
import type { ListenerTls } from '../../security/listener-tls.ts';
import type { SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import type { StreamRegistry } from '../../status/node-registry.ts';
import { requestType } from '../../xds/proto-root.ts';
import {
  DELTA_DISCOVERY_REQUEST,
  DISCOVERY_REQUEST,
  RESOURCE_TYPES,
  type ResourceKind,
} from '../../xds/resource-types.ts';
import { SotwStream } from '../sotw-stream.ts';
import { FleetError } from '../../shared/errors.ts';
import { DeltaStream } from '../delta-stream.ts';
import type { GroupAckTracker } from '../group-ack-tracker.ts';
import { checkNodeIdentity, clientCertificateOf } from '../../security/node-identity.ts';
import type { NodeIdentity } from '../../model/node-groups.ts';
import type { StreamBase } from '../stream-base.ts';
import { grpcVariant, xdsClusterName } from '../../snapshot/config-sources.ts';
import { GRPC_XDS_CLUSTER } from '../../xds/xds-clusters.ts';
import { decodeDeltaRequest, decodeSotwRequest } from './requests.ts';
import { createGrpcJsCallServer } from './grpc-js-call-server.ts';
import { createCallServer, type CallServerOptions, type MethodHandler } from './call-server.ts';
import { Status, type StatusCode } from './status.ts';

/** Streams one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
export const MAX_STREAMS_PER_CONNECTION = 1000;

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
  /** The xDS TTL of overrides (ttl.ts). */
  overrideTtlMs?: number;
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
  /** TLS (see grpcTls); with a CA, client certificates are required. */
  tls?: CallServerOptions['tls'];
  /** Which gRPC server carries the calls: fleetxds's own over node:http2 (the default), or grpc-js's. */
  implementation?: 'node-http2' | 'grpc-js';
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

/** How long the UNAVAILABLE statuses get to go out before a shutdown destroys the connections. */
const STATUS_FLUSH_MS = 50;

export interface GrpcTransport {
  /** Listens on host:port (0: a free port); resolves the port. Serving threads share one with reusePort. */
  listen(host: string, port: number, opts?: { reusePort?: boolean }): Promise<number>;
  /**
   * Ends every open stream with UNAVAILABLE at once (before the promise is returned): Envoy keeps its config and
   * reconnects. Then, once the status frames have gone out, stops listening and closes the connections. xDS
   * streams never end on their own, so a graceful shutdown would only wait.
   */
  close(reason: string): Promise<void>;
  /** New connections get this certificate, key and CA; open ones keep theirs (a TLS server only). */
  setTls(tls: ListenerTls): void;
}

/** Stream counts for `threads` serving threads (see GrpcServerOptions.streamCount). */
export function sharedStreamSlots(threads: number): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4 * threads));
}

/** What every xDS method's handler shares: the options, the stream limit, the request decoders. */
interface MethodContext {
  opts: GrpcServerOptions;
  /** Counts a stream against maxStreams; false when the limit is reached. */
  admit(): boolean;
  release(): void;
  maxUnread: number;
  debug: boolean;
  sotwType: ReturnType<typeof requestType>;
  deltaType: ReturnType<typeof requestType>;
}

/** The handler of one xDS method: each call is a SotW or delta stream of its transport. */
function xdsMethod(spec: ServiceSpec, ctx: MethodContext): MethodHandler {
  const { opts } = ctx;
  return (call) => {
    if (!ctx.admit()) {
      // Above its share, a replica sheds new streams: the proxy retries and lands on another.
      call.end(
        Status.RESOURCE_EXHAUSTED,
        `this fleetxds serves its maximum of ${opts.maxStreams} streams; connect to another replica`,
      );
      return undefined;
    }
    const reqType = spec.delta ? ctx.deltaType : ctx.sotwType;
    const peer = call.peer;
    // A child logger per stream costs its bindings' serialization at every (re)connect; made when one is logged.
    let child: Logger | undefined;
    const log = () => (child ??= opts.log.child({ transport: spec.transport, peer }));
    let finished = false;
    const prefix = opts.identityPrefix;
    const peerCert = call.peerCertificate();
    /** Ends the call with a status and lets the stream go (its close event may come later). */
    const fail = (code: StatusCode, details: string) => {
      call.end(code, details);
      finish();
    };
    const streamOpts = {
      authorize: prefix ? (node: NodeIdentity) => checkNodeIdentity(node, peerCert, prefix) : undefined,
      clientCertificate: peerCert && clientCertificateOf(peerCert),
      cache: opts.cache,
      registry: opts.registry,
      acks: opts.acks,
      transport: spec.transport,
      peer,
      fixedKind: spec.kind,
      secretsAllowed: opts.secretsAllowed ?? false,
      onRefusal: (reason: string) => log().warn({ node: stream.streamStatus?.nodeId }, reason),
      // A per-type client has no ADS: point references at the same services over its own xDS cluster.
      variantFor: spec.kind
        ? (node: NodeIdentity) =>
            grpcVariant(xdsClusterName(node.metadata, call.authority, GRPC_XDS_CLUSTER), spec.delta)
        : undefined,
      maxBehindMs: opts.maxBehindMs ?? DEFAULT_MAX_BEHIND_MS,
      warmingHoldMs: opts.warmingHoldMs,
      overrideTtlMs: opts.overrideTtlMs,
      onStuck: (behindMs: number) => {
        log().warn(
          { node: stream.streamStatus?.nodeId, behindMs },
          'client has not read its responses for too long; ending the stream',
        );
        fail(
          Status.RESOURCE_EXHAUSTED,
          `responses unread for ${Math.round(behindMs / 1000)} s; reconnect to get the current state`,
        );
      },
      send: (parts: readonly Buffer[], flushed: () => void) => {
        let length = 0;
        for (const p of parts) length += p.length;
        // A client that does not read must not make us buffer push after push without bound.
        if (call.pendingBytes + length > ctx.maxUnread) {
          if (!call.writable) return;
          log().warn(
            { node: stream.streamStatus?.nodeId, unreadBytes: call.pendingBytes },
            'client is not reading its responses; ending the stream',
          );
          fail(
            Status.RESOURCE_EXHAUSTED,
            `more than ${ctx.maxUnread} bytes of responses unread; reconnect to get the current state`,
          );
          return;
        }
        call.write(parts, length, flushed);
      },
    };
    const stream: StreamBase = spec.delta ? new DeltaStream(streamOpts) : new SotwStream(streamOpts);
    const finish = () => {
      if (finished) return;
      finished = true;
      ctx.release();
      const s = stream.streamStatus;
      // Per-stream lines are debug: thousands of proxies reconnecting must not flood (or block on) the log.
      if (s && ctx.debug) log().debug({ node: s.nodeId, group: s.group }, 'stream closed');
      stream.close();
    };
    return {
      message: (bytes) => {
        try {
          const opened = stream.streamStatus !== undefined;
          if (spec.delta) (stream as DeltaStream).handle(decodeDeltaRequest(reqType, bytes, !opened));
          else {
            const sotw = stream as SotwStream;
            sotw.handle(decodeSotwRequest(reqType, bytes, !opened, (typeUrl) => sotw.subscriptionOf(typeUrl)));
          }
          const s = stream.streamStatus;
          if (ctx.debug && !opened && s) log().debug({ node: s.nodeId, group: s.group }, 'stream opened');
        } catch (err) {
          if (!(err instanceof FleetError)) log().error({ err }, 'stream failed');
          else log().warn({ reason: err.message }, 'protocol error; closing stream');
          fail(err instanceof FleetError ? Status[err.grpcStatus] : Status.INTERNAL, (err as Error).message);
        }
      },
      // The client is done: end with OK, as a gRPC server does when its handler ends the call.
      halfClose: () => fail(Status.OK, ''),
      closed: finish,
    };
  };
}

export function createGrpcServer(opts: GrpcServerOptions): GrpcTransport {
  const { slots, slot } = opts.streamCount ?? { slots: sharedStreamSlots(1), slot: 0 };
  const ctx: MethodContext = {
    opts,
    admit: () => {
      if (opts.maxStreams === undefined) return true;
      let open = 0;
      for (let i = 0; i < slots.length; i++) open += Atomics.load(slots, i);
      if (open >= opts.maxStreams) return false;
      Atomics.add(slots, slot, 1);
      return true;
    },
    release: () => {
      if (opts.maxStreams !== undefined) Atomics.sub(slots, slot, 1);
    },
    maxUnread: opts.maxUnreadBytes ?? DEFAULT_MAX_UNREAD_BYTES,
    debug: opts.log.isLevelEnabled('debug'),
    sotwType: requestType(DISCOVERY_REQUEST),
    deltaType: requestType(DELTA_DISCOVERY_REQUEST),
  };
  const create = opts.implementation === 'grpc-js' ? createGrpcJsCallServer : createCallServer;
  const server = create({
    methods: new Map(SERVICES.map((spec) => [`/${spec.service}/${spec.method}`, xdsMethod(spec, ctx)])),
    maxReceiveBytes: opts.maxReceiveBytes ?? 16 * 1024 * 1024,
    // Per-type xDS opens a stream per resource type on one connection, an ADS client one: a client
    // that opens thousands is not an xDS client, and each stream holds memory here.
    maxConcurrentStreams: MAX_STREAMS_PER_CONNECTION,
    // Detect dead peers. (Envoy is advised to ping every 30 s; Node answers pings without limit.)
    keepaliveTimeMs: 60_000,
    keepaliveTimeoutMs: 20_000,
    // Rebalancing across replicas: after this age (±10% jitter) a connection gets a GOAWAY, and its
    // streams are ended after the grace period; proxies reconnect, spread over time, through whatever
    // balances them (DNS, their xDS cluster's endpoints).
    maxConnectionAgeMs: opts.maxConnectionAgeMs,
    maxConnectionAgeGraceMs: opts.maxConnectionAgeGraceMs,
    tls: opts.tls,
  });
  return {
    listen: (host, port, o) => server.listen(host, port, o),
    close: (reason) => server.close(Status.UNAVAILABLE, reason, STATUS_FLUSH_MS),
    setTls: (tls) => server.setTls(tls),
  };
}
