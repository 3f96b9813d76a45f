/**
 * A scripted xDS client for protocol tests: raw DiscoveryRequest/Response over a real gRPC
 * socket, encoded and decoded with the real Envoy protos. It asserts nothing itself.
 */
import * as grpc from '@grpc/grpc-js';
import { decodeToJson, encodeJson } from '../../src/xds/proto-json.ts';
import { RESOURCE_TYPES, TypeUrls } from '../../src/xds/resource-types.ts';

export type Json = Record<string, any>;

export interface ScriptedStream {
  send(req: Json): void;
  /** Next response, or throws after `ms`. */
  next(ms?: number): Promise<Json>;
  /**
   * Resolves true if no response arrives within `ms` and false if one does. Throws if the stream
   * ends (the server closing it with an error is not silence).
   */
  quiet(ms?: number): Promise<boolean>;
  /** Resolves with the stream's final status. */
  status: Promise<grpc.StatusObject>;
  close(): void;
  /** Total bytes received. */
  bytes: number;
}

function method(path: string, req: string, res: string) {
  return {
    path,
    requestStream: true,
    responseStream: true,
    requestSerialize: (v: Json) => {
      const { bytes, issues } = encodeJson(req, v);
      if (issues.length) throw new Error(`bad test request: ${JSON.stringify(issues)}`);
      return Buffer.from(bytes);
    },
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (v: Buffer) => v,
    responseDeserialize: (b: Buffer) => ({ json: decodeToJson(res, b), size: b.length }),
  };
}

const SERVICES: Record<string, string> = {
  ads: '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
  'delta-ads': '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources',
  ...Object.fromEntries(
    RESOURCE_TYPES.flatMap((t) => [
      [t.short, `/${t.grpcService}/Stream${t.grpcNoun}`],
      [`delta-${t.short}`, `/${t.grpcService}/Delta${t.grpcNoun}`],
    ]),
  ),
};

export function connect(
  port: number,
  service: keyof typeof SERVICES = 'ads',
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  options: grpc.ChannelOptions = {},
): { open(): ScriptedStream; close(): void } {
  const delta = service.startsWith('delta');
  const def = {
    Stream: delta
      ? method(
          SERVICES[service]!,
          'envoy.service.discovery.v3.DeltaDiscoveryRequest',
          'envoy.service.discovery.v3.DeltaDiscoveryResponse',
        )
      : method(
          SERVICES[service]!,
          'envoy.service.discovery.v3.DiscoveryRequest',
          'envoy.service.discovery.v3.DiscoveryResponse',
        ),
  };
  const Client = grpc.makeGenericClientConstructor(def, 'X');
  const client = new Client(`127.0.0.1:${port}`, credentials, {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    ...options,
  }) as unknown as grpc.Client & { Stream: () => grpc.ClientDuplexStream<Json, { json: Json; size: number }> };
  return {
    open() {
      const call = client.Stream();
      const queue: Json[] = [];
      const waiters: { resolve: (v: Json) => void; reject: (e: Error) => void }[] = [];
      let ended: grpc.StatusObject | undefined;
      const endedError = (what: string) =>
        new Error(`stream ended (${grpc.status[ended!.code]}: ${ended!.details}) while ${what}`);
      const s: ScriptedStream = {
        bytes: 0,
        send: (req) => call.write(req),
        next: (ms = 3000) =>
          new Promise((resolve, reject) => {
            if (queue.length) return resolve(queue.shift()!);
            if (ended) return reject(endedError('a response was expected'));
            const t = setTimeout(() => reject(new Error(`no response within ${ms} ms`)), ms);
            waiters.push({
              resolve: (v) => {
                clearTimeout(t);
                resolve(v);
              },
              reject: (e) => {
                clearTimeout(t);
                reject(e);
              },
            });
          }),
        quiet: async (ms = 300) => {
          if (queue.length) return false;
          await new Promise((r) => setTimeout(r, ms));
          if (queue.length) return false;
          if (ended) throw endedError('silence was expected');
          return true;
        },
        status: new Promise((resolve) =>
          call.on('status', (st: grpc.StatusObject) => {
            ended = st;
            // The status first: a caller racing next() against it sees why the stream ended.
            resolve(st);
            for (const w of waiters.splice(0)) w.reject(endedError('a response was expected'));
          }),
        ),
        close: () => call.cancel(),
      };
      call.on('data', (d: { json: Json; size: number }) => {
        s.bytes += d.size;
        const w = waiters.shift();
        if (w) w.resolve(d.json);
        else queue.push(d.json);
      });
      call.on('error', () => {});
      return s;
    },
    close: () => client.close(),
  };
}

/** Type URLs by kind, from the server's descriptors. */
export const T = TypeUrls;

export const names = (res: Json): string[] => (res.resources ?? []).map((r: Json) => r.name ?? r.cluster_name);
/** Delta: names of the Resource wrappers, and their versions. */
export const dnames = (res: Json): string[] => (res.resources ?? []).map((r: Json) => r.name);
export const dversions = (res: Json): Record<string, string> =>
  Object.fromEntries((res.resources ?? []).map((r: Json) => [r.name, r.version]));
