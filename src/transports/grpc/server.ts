/**
 * gRPC transport: ADS and the per-type SotW services over @grpc/grpc-js. Requests are decoded
 * with the real Envoy protos; responses are pre-assembled bytes (see sotw-stream.ts), so the
 * response serializer is the identity.
 */
import * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import type { Logger } from 'pino';
import type { SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import type { NodeRegistry, StreamStatus } from '../../status/node-registry.ts';
import { messageToJson } from '../../xds/proto-json.ts';
import { lookupType } from '../../xds/proto-root.ts';
import { DISCOVERY_REQUEST, type ResourceKind } from '../../xds/type-urls.ts';
import { ProtocolError, SotwStream, type SotwRequest } from '../sotw-stream.ts';

export interface GrpcServerOptions {
  cache: SnapshotCache;
  registry: NodeRegistry;
  log: Logger;
  /** Largest request accepted. Envoy requests naming tens of thousands of resources pass 4 MiB. */
  maxReceiveBytes?: number;
}

interface ServiceSpec {
  service: string;
  method: string;
  kind?: ResourceKind;
  transport: string;
}

const SOTW_SERVICES: ServiceSpec[] = [
  { service: 'envoy.service.discovery.v3.AggregatedDiscoveryService', method: 'StreamAggregatedResources', transport: 'grpc-ads' },
  { service: 'envoy.service.cluster.v3.ClusterDiscoveryService', method: 'StreamClusters', kind: 'cluster', transport: 'grpc-cds' },
  { service: 'envoy.service.endpoint.v3.EndpointDiscoveryService', method: 'StreamEndpoints', kind: 'endpoint', transport: 'grpc-eds' },
  { service: 'envoy.service.listener.v3.ListenerDiscoveryService', method: 'StreamListeners', kind: 'listener', transport: 'grpc-lds' },
  { service: 'envoy.service.route.v3.RouteDiscoveryService', method: 'StreamRoutes', kind: 'route', transport: 'grpc-rds' },
  { service: 'envoy.service.secret.v3.SecretDiscoveryService', method: 'StreamSecrets', kind: 'secret', transport: 'grpc-sds' },
];

/** DiscoveryRequest -> the plain shape the state machine uses (node metadata as JSON). */
function toSotwRequest(type: protobuf.Type, msg: protobuf.Message): SotwRequest {
  const m = msg as unknown as Record<string, any>;
  const req: SotwRequest = {
    version_info: m.version_info || '',
    resource_names: m.resource_names ?? [],
    type_url: m.type_url || '',
    response_nonce: m.response_nonce || '',
    error_detail: m.error_detail ? { code: m.error_detail.code ?? 0, message: m.error_detail.message ?? '' } : null,
  };
  if (m.node) {
    const n = m.node;
    const structType = (type.fields.node.resolvedType as protobuf.Type).fields.metadata.resolvedType as protobuf.Type;
    req.node = {
      id: n.id || '',
      cluster: n.cluster || '',
      metadata: n.metadata ? (messageToJson(structType, n.metadata) as Record<string, unknown>) : {},
      userAgent: [n.user_agent_name, n.user_agent_version || ''].filter(Boolean).join('/'),
    };
  }
  return req;
}

export function createGrpcServer(opts: GrpcServerOptions): grpc.Server {
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
  });
  const reqType = lookupType(DISCOVERY_REQUEST);

  for (const spec of SOTW_SERVICES) {
    const definition: grpc.ServiceDefinition = {
      [spec.method]: {
        path: `/${spec.service}/${spec.method}`,
        requestStream: true,
        responseStream: true,
        requestSerialize: (v: unknown) => Buffer.from(reqType.encode(v as protobuf.Message).finish()),
        requestDeserialize: (b: Buffer) => reqType.decode(b),
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    };
    server.addService(definition, {
      [spec.method]: (call: grpc.ServerDuplexStream<protobuf.Message, Buffer>) => {
        const log = opts.log.child({ transport: spec.transport, peer: call.getPeer() });
        const stream = new SotwStream({
          cache: opts.cache,
          registry: opts.registry,
          transport: spec.transport,
          peer: call.getPeer(),
          fixedKind: spec.kind,
          send: (bytes) => {
            if (!call.writable || call.destroyed) return;
            call.write(bytes);
          },
        });
        const finish = () => {
          const s = stream.streamStatus;
          if (s) log.info({ node: s.nodeId, group: s.group }, 'stream closed');
          stream.close();
        };
        call.on('data', (msg: protobuf.Message) => {
          try {
            const opened = stream.streamStatus !== undefined;
            stream.handle(toSotwRequest(reqType, msg));
            const s = stream.streamStatus as StreamStatus | undefined;
            if (!opened && s) log.info({ node: s.nodeId, group: s.group }, 'stream opened');
          } catch (err) {
            const code = err instanceof ProtocolError ? err.grpcCode : grpc.status.INTERNAL;
            if (!(err instanceof ProtocolError)) log.error({ err }, 'stream failed');
            else log.warn({ reason: err.message }, 'protocol error; closing stream');
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
  return server;
}

/** Binds and resolves the actual port (0 picks a free one). */
export function bindGrpc(server: grpc.Server, address: string, credentials = grpc.ServerCredentials.createInsecure()): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, port) => (err ? reject(err) : resolve(port)));
  });
}
