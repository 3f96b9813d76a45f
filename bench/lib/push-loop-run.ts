/**
 * The server's own work per stream for one push, without sockets: `n` ADS streams (SotW or delta)
 * held in process on the running app's snapshot cache, node registry and metrics, each subscribed
 * as Envoy is (CDS and LDS wildcard, RDS and EDS by name) and up to date. A one-route change, then a
 * one-endpoint change, is published; what is timed is the publish loop (every stream deciding what
 * it is owed and handing its bytes to a send that only keeps them) and then the handling of every
 * stream's ACK (state machine, registry, metrics), after the time to decode the ACKs' bytes (as
 * the gRPC transport does: grpc/requests.ts), which is printed on its own.
 *
 * The peers bench measures the same push end to end, where the one-core client and the kernel add
 * ±25% from run to run; this one isolates what fleetxds's code costs, to a few percent. It runs as
 * the server does, bundled (bench/scenarios/push-loop.ts): under tsx every closure made per call is
 * also given its name at run time, which the bundle does not do, and which doubled some figures.
 *
 * `node push-loop-run.js <streams> <rounds> <sotw|delta> <services>` prints the result as one JSON line.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import protobuf from 'protobufjs';
import pino from 'pino';
import { startApp, type RunningApp } from '../../src/app/app.ts';
import { SotwStream, type SotwRequest } from '../../src/transports/sotw-stream.ts';
import { DeltaStream, type DeltaRequest } from '../../src/transports/delta-stream.ts';
import { decodeDeltaRequest, decodeSotwRequest } from '../../src/transports/grpc/requests.ts';
import { requestType } from '../../src/xds/proto-root.ts';
import type { StreamOptions } from '../../src/transports/stream-base.ts';
import { GroupAckTracker } from '../../src/transports/group-ack-tracker.ts';
import {
  DELTA_DISCOVERY_REQUEST,
  DISCOVERY_REQUEST,
  TypeUrls,
  type ResourceKind,
} from '../../src/xds/resource-types.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { generateTree, serviceYaml, vhostYaml } from './generate.ts';
import { median } from './proc.ts';

export type PushLoopResult = {
  protocol: Protocol;
  services: number;
  streams: number;
  /** Per stream, median of the rounds: the publish loop, then the ACKs' handling, in microseconds. */
  routePushUs: number;
  routeAckUs: number;
  /** Decoding the route ACKs (the bytes of a DiscoveryRequest as Envoy sends them), per stream, us. */
  routeAckDecodeUs: number;
  endpointPushUs: number;
  endpointAckUs: number;
  endpointAckDecodeUs: number;
  /** JS heap held per stream once every stream is subscribed and up to date, KB. */
  heapPerStreamKB: number;
};

type Protocol = 'sotw' | 'delta';

/** A held stream and the last response of each type it was sent (version and nonce: its ACK). */
interface Held {
  stream: { handle(req: object): void; close(): void; decode(bytes: Uint8Array): object };
  last: Map<string, { version: string; nonce: string }>;
  unread: (readonly Buffer[])[];
  flushed: (() => void)[];
}

/** version_info (1), type_url (4) and nonce (5) of a DiscoveryResponse, the resources skipped. */
function head(message: Buffer): { version: string; typeUrl: string; nonce: string } {
  const r = protobuf.Reader.create(message);
  const out = { version: '', typeUrl: '', nonce: '' };
  while (r.pos < r.len) {
    const tag = r.uint32();
    const field = tag >>> 3;
    if (field === 1) out.version = r.string();
    else if (field === 4) out.typeUrl = r.string();
    else if (field === 5) out.nonce = r.string();
    else r.skipType(tag & 7);
  }
  return out;
}

/** How each protocol's client opens a type, subscribes by name, and ACKs (as Envoy does). */
const PROTOCOLS: Record<
  Protocol,
  {
    make(o: StreamOptions): Held['stream'];
    subscribe(kind: ResourceKind, names: string[] | undefined): object;
    ack(kind: ResourceKind, last: { version: string; nonce: string }, names: string[] | undefined): object;
  }
> = {
  sotw: {
    make: (o) => {
      const s = new SotwStream(o);
      return {
        handle: (req) => s.handle(req),
        close: () => s.close(),
        decode: (bytes) => decodeSotwRequest(SOTW_REQUEST, bytes, false, (typeUrl) => s.subscriptionOf(typeUrl)),
      };
    },
    subscribe: (kind, names) => ({ type_url: TypeUrls[kind], resource_names: names }) satisfies SotwRequest,
    ack: (kind, last, names) =>
      ({
        type_url: TypeUrls[kind],
        version_info: last.version,
        response_nonce: last.nonce,
        resource_names: names,
      }) satisfies SotwRequest,
  },
  delta: {
    make: (o) => {
      const s = new DeltaStream(o);
      return {
        handle: (req) => s.handle(req),
        close: () => s.close(),
        decode: (bytes) => decodeDeltaRequest(DELTA_REQUEST, bytes, false),
      };
    },
    subscribe: (kind, names) => ({ type_url: TypeUrls[kind], resource_names_subscribe: names }) satisfies DeltaRequest,
    ack: (kind, last) => ({ type_url: TypeUrls[kind], response_nonce: last.nonce }) satisfies DeltaRequest,
  },
};

const SOTW_REQUEST = requestType(DISCOVERY_REQUEST);
const DELTA_REQUEST = requestType(DELTA_DISCOVERY_REQUEST);

/** Responses sent, by every stream: each change must reach every stream, or the figures mean nothing. */
let sent = 0;

function hold(app: RunningApp, acks: GroupAckTracker, i: number, protocol: Protocol): Held {
  const unread: Held['unread'] = [];
  const flushed: Held['flushed'] = [];
  const stream = PROTOCOLS[protocol].make({
    cache: app.cache,
    registry: app.registry,
    acks,
    transport: protocol === 'sotw' ? 'grpc-ads' : 'grpc-ads-delta',
    peer: 'bench',
    send: (parts, done) => {
      unread.push(parts); // read after the timed loop
      flushed.push(done);
      sent++;
    },
  });
  stream.handle({ ...PROTOCOLS[protocol].subscribe('cluster', undefined), node: { id: `node-${i}`, cluster: 'edge' } });
  stream.handle(PROTOCOLS[protocol].subscribe('listener', undefined));
  return { stream, last: new Map(), unread, flushed };
}

/** The names a type's snapshot holds in the first group: what Envoy asks for by name. */
function namesOf(app: RunningApp, kind: ResourceKind): string[] {
  const group = [...app.cache.current!.groups.values()][0]!;
  return [...group.types[kind].resources.keys()];
}

/**
 * Every stream's writes flushed, then its ACK of `kinds` (as Envoy sends them: same names), as
 * bytes: the time to decode them all, then to handle them all (ms).
 */
function ackAll(
  protocol: Protocol,
  streams: Held[],
  kinds: ResourceKind[],
  names: Partial<Record<ResourceKind, string[]>>,
): { decodeMs: number; handleMs: number } {
  for (const h of streams) {
    for (const f of h.flushed.splice(0)) f();
    for (const parts of h.unread.splice(0)) {
      const r = head(Buffer.concat(parts));
      h.last.set(r.typeUrl, { version: r.version, nonce: r.nonce });
    }
  }
  const type = protocol === 'sotw' ? SOTW_REQUEST : DELTA_REQUEST;
  const encoded = streams.map((h) =>
    kinds.flatMap((kind) => {
      const last = h.last.get(TypeUrls[kind]);
      return last ? [type.encode(type.fromObject(PROTOCOLS[protocol].ack(kind, last, names[kind]))).finish()] : [];
    }),
  );
  const t0 = performance.now();
  const requests = streams.map((h, i) => encoded[i]!.map((bytes) => h.stream.decode(bytes)));
  const t1 = performance.now();
  streams.forEach((h, i) => {
    for (const req of requests[i]!) h.stream.handle(req);
  });
  return { decodeMs: t1 - t0, handleMs: performance.now() - t1 };
}

/** The JS heap in use after a full collection (the run is not started with --expose-gc). */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

async function pushLoop(n: number, rounds: number, protocol: Protocol, services: number): Promise<PushLoopResult> {
  const root = tempDir('fleetxds-push-loop-');
  const cfg = join(root, 'cfg');
  generateTree(cfg, { services, routesPerVhost: 100 });
  const app = await startApp(
    {
      configDir: cfg,
      database: join(root, 'state.db'),
      grpc: { listen: '127.0.0.1:0' },
      admin: { listen: '127.0.0.1:0' },
      watch: { enabled: false, debounceMs: 50, maxWaitMs: 500 },
      log: { level: 'silent' },
    },
    pino({ level: 'silent' }),
  );
  try {
    let started = 0;
    app.cache.onPublish(() => (started = performance.now()));
    const acks = new GroupAckTracker(false);
    const heapBefore = heapAfterGc();
    const streams = Array.from({ length: n }, (_, i) => hold(app, acks, i, protocol));
    const names = { route: namesOf(app, 'route'), endpoint: namesOf(app, 'endpoint') };
    ackAll(protocol, streams, ['cluster', 'listener'], names);
    for (const h of streams) {
      h.stream.handle(PROTOCOLS[protocol].subscribe('route', names.route));
      h.stream.handle(PROTOCOLS[protocol].subscribe('endpoint', names.endpoint));
    }
    ackAll(protocol, streams, ['route', 'endpoint'], names);
    for (const h of streams) h.last.clear(); // the bench's own bookkeeping, not the server's
    const heapPerStreamKB = Number(((heapAfterGc() - heapBefore) / n / 1024).toFixed(1));
    let ended = 0;
    app.cache.onPublish(() => (ended = performance.now())); // after every stream's listener
    const measure = async (change: () => void, kind: ResourceKind) => {
      change();
      const before = sent;
      const result = await app.reload();
      if ((result as { status?: string }).status !== 'applied')
        throw new Error(`change not applied: ${JSON.stringify(result)}`);
      if (sent - before !== n) throw new Error(`a ${kind} change reached ${sent - before} of ${n} streams`);
      const pushMs = ended - started;
      const { decodeMs, handleMs } = ackAll(protocol, streams, [kind], names);
      return { push: (pushMs * 1000) / n, ack: (handleMs * 1000) / n, decode: (decodeMs * 1000) / n };
    };
    const route: { push: number; ack: number; decode: number }[] = [];
    const endpoint: { push: number; ack: number; decode: number }[] = [];
    for (let k = 1; k <= rounds; k++) {
      route.push(
        await measure(
          () =>
            writeFileSync(
              join(cfg, 'routes', 'vh-0.yaml'),
              vhostYaml(0, 100, services).replace('/api/r7/', `/api/r7-moved-${k}/`),
            ),
          'route',
        ),
      );
      endpoint.push(
        await measure(
          () =>
            writeFileSync(
              join(cfg, 'services', 'svc-0.yaml'),
              [serviceYaml(0, k), ...Array.from({ length: 99 }, (_, i) => serviceYaml(i + 1))].join('---\n'),
            ),
          'endpoint',
        ),
      );
    }
    const us = (xs: number[]) => Number(median(xs).toFixed(1));
    for (const h of streams) h.stream.close();
    return {
      protocol,
      services,
      streams: n,
      routePushUs: us(route.map((r) => r.push)),
      routeAckUs: us(route.map((r) => r.ack)),
      routeAckDecodeUs: us(route.map((r) => r.decode)),
      endpointPushUs: us(endpoint.map((r) => r.push)),
      endpointAckUs: us(endpoint.map((r) => r.ack)),
      endpointAckDecodeUs: us(endpoint.map((r) => r.decode)),
      heapPerStreamKB,
    };
  } finally {
    await app.close();
  }
}

const [streams = '5000', rounds = '9', protocol = 'sotw', services = '100'] = process.argv.slice(2);
if (protocol !== 'sotw' && protocol !== 'delta') throw new Error(`protocol: sotw or delta, not ${protocol}`);
console.log(JSON.stringify(await pushLoop(Number(streams), Number(rounds), protocol, Number(services))));
