/**
 * Side by side (`npm run bench -- peers`): fleetxds, go-control-plane v0.14 (per-type versions)
 * and the bare-node:http2 floor serve the same resources, one at a time, each pinned to core 0;
 * one fan-out client on core 1 drives each with N SotW ADS streams, in one of two shapes (the Go
 * client that reads and ACKs in batches, the grpc-js one that ACKs each response as it arrives:
 * `spawnClient`). Scenarios: a one-route change, a one-endpoint change, and a reconnect storm (every
 * stream reconnects at once). Per scenario: p99 ms until every stream got the new response (the
 * storm: its full state), server CPU seconds, bytes per stream; server RSS per held stream. A run
 * makes the one-route and the one-endpoint change several times (CHANGES_PER_RUN) and reports
 * the median of each figure.
 *
 * Where the clock starts: at the publish. For the peers that is the SIGHUP that makes them publish
 * resources rendered from the same tree and already loaded (SIGUSR1, untimed). For fleetxds it
 * is when its pipeline handed the new version to the streams (its log line "applied config
 * version" says when and how much CPU reading, validating and building took; that CPU is taken off,
 * so CPU figures are per push). `fromWriteP99` is fleetxds's p99 from the write of the YAML file,
 * with the 50 ms debounce and the whole pipeline.
 */
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { generateTree, serviceYaml, vhostYaml } from '../lib/generate.ts';
import { CLIENT_CORE, median, percentile, pin, procStats, SERVER_CORE, sleep, threadCpu } from '../lib/proc.ts';
import { benchServer } from '../lib/server.ts';
import { EventProcess, libHarness } from '../lib/event-process.ts';
import type { ClientShape } from '../lib/targets.ts';

export type PeerName = 'fleetxds' | 'go-control-plane' | 'bare-http2' | 'fleetxds-grpc-js';
export const PEERS: PeerName[] = ['fleetxds', 'go-control-plane', 'bare-http2'];

/**
 * The fan-out client of a shape: `batching`, the Go client (bench/peers/fanout), whose goroutines
 * read many streams per wake-up, so ACKs reach the server in bursts; `trickling`, the grpc-js
 * client (bench/lib/trickle-fanout.ts), which decodes and ACKs each response as it arrives, so
 * ACKs reach the server one or a few per read, as from proxies on separate hosts.
 */
function spawnClient(shape: ClientShape, fanout: string, port: number, n: number, cores: string): EventProcess {
  const target = `127.0.0.1:${port}`;
  const client =
    shape === 'batching'
      ? new EventProcess(
          spawn(fanout, ['-target', target, '-n', String(n)], {
            env: { ...process.env, GOMAXPROCS: String(cores.split(',').length) },
            stdio: ['pipe', 'pipe', 'pipe'],
          }),
        )
      : libHarness('trickle-fanout.ts', ['--target', target, '--n', n]);
  pin(client.child.pid!, cores);
  return client;
}

export interface PeerResult {
  server: PeerName;
  client: ClientShape;
  services: number;
  n: number;
  routeP99: number;
  fromWriteP99: number;
  routeCpu: number;
  /**
   * The server's own time to hand a one-route push to every stream (its publish loop), ms: what it
   * logs (fleetxds: the publish step, which with serving threads is the hand-off to them); NaN
   * where the server does not say (go-control-plane).
   */
  routeLoopMs: number;
  endpointP99: number;
  endpointCpu: number;
  endpointBytes: number;
  stormP99: number;
  stormCpu: number;
  kbPerStream: number;
  /** The lowest and highest of the changes each median is taken from ("0.19-0.21"). */
  spread: Record<'routeP99' | 'routeCpu' | 'endpointP99' | 'endpointCpu', string>;
  /** fleetxds: where each scenario's CPU went, by thread (the threads bench prints it). */
  threads?: Record<'route' | 'endpoint' | 'storm', ThreadSplit>;
}

/**
 * A scenario's CPU seconds by thread: the main JavaScript thread (with `grpc.threads: 1` it serves
 * every stream; with more it runs the pipeline and the node registry the serving threads report
 * to), each serving thread (any other worker thread too: a parse worker, were a parse to use them;
 * the bench's trees are too small for that), V8's helper threads (concurrent GC marking and compiling) and the rest
 * (libuv's pool, Node's platform threads). `longest` is the busiest JavaScript thread: with a core
 * for each thread, no push could end sooner than that thread's work.
 */
export interface ThreadSplit {
  main: number;
  serving: number[];
  helpers: number;
  other: number;
  longest: number;
}

/** One change's figures, as `peerRun` measures them. */
interface Measured {
  p99: number;
  fromWrite: number;
  cpu: number;
  loopMs: number;
  bytes: number;
  threads: ThreadSplit;
}

/** The lowest and highest p99 and CPU of several changes. */
function spreadOf(each: readonly Measured[]): { p99: string; cpu: string } {
  const range = (f: (x: Measured) => number) => `${Math.min(...each.map(f))}-${Math.max(...each.map(f))}`;
  return { p99: range((x) => x.p99), cpu: range((x) => x.cpu) };
}

/** Several changes' figures: each the median of that figure (the thread split's too, figure by figure). */
function medianMeasure(each: readonly Measured[]): Measured {
  const m = (f: (x: Measured) => number) => median(each.map(f));
  const t = (f: (x: ThreadSplit) => number) => m((x) => f(x.threads));
  return {
    p99: m((x) => x.p99),
    fromWrite: m((x) => x.fromWrite),
    cpu: m((x) => x.cpu),
    loopMs: m((x) => x.loopMs),
    bytes: m((x) => x.bytes),
    threads: {
      main: t((x) => x.main),
      serving: each[0]!.threads.serving.map((_, i) => t((x) => x.serving[i] ?? 0)),
      helpers: t((x) => x.helpers),
      other: t((x) => x.other),
      longest: t((x) => x.longest),
    },
  };
}

function splitByThread(
  before: ReturnType<typeof threadCpu>,
  after: ReturnType<typeof threadCpu>,
  /** CPU of the pipeline before the publish, which ran on the main thread: not the push's. */
  mainBefore: number,
): ThreadSplit {
  const split: ThreadSplit = { main: 0, serving: [], helpers: 0, other: 0, longest: 0 };
  for (const [tid, t] of after) {
    const cpu = t.cpuSeconds - (before.get(tid)?.cpuSeconds ?? 0);
    if (t.name === 'MainThread') split.main += cpu - mainBefore;
    else if (t.name === 'WorkerThread') split.serving.push(cpu);
    else if (t.name === 'V8Worker') split.helpers += cpu;
    else split.other += cpu;
  }
  const round = (x: number) => Number(Math.max(0, x).toFixed(2));
  split.serving = split.serving.map(round);
  [split.main, split.helpers, split.other] = [round(split.main), round(split.helpers), round(split.other)];
  split.longest = Math.max(split.main, ...split.serving);
  return split;
}

/**
 * Changes of the generated tree, the same for every server. The k-th change of a run differs from
 * the one before it (a route moved to a new path, the endpoints of svc-0 moved to new addresses).
 */
const changeRoute = (services: number, k: number) => (cfg: string) =>
  writeFileSync(
    join(cfg, 'routes', 'vh-0.yaml'),
    vhostYaml(0, 100, services).replace('/api/r7/', `/api/r7-moved-${k}/`),
  );
const changeEndpoint = (k: number) => (cfg: string) =>
  writeFileSync(
    join(cfg, 'services', 'svc-0.yaml'),
    [serviceYaml(0, 7 + k), ...Array.from({ length: 99 }, (_, i) => serviceYaml(i + 1))].join('---\n'),
  );

/**
 * How many times a run repeats the one-route and the one-endpoint change (each figure is the
 * median of them): a single change's p99 and loop moved by 25-40% from change to change (the first
 * after the connects, and the ones a GC lands in), which one run per point could not tell from a
 * difference of code. The storm runs once: it replaces every connection.
 */
export const CHANGES_PER_RUN = 5;

/** Builds the Go harness (server and client) once per run of the suite. */
export function buildGoHarness(): { gcpServer: string; fanout: string } {
  const out = tempDir('fleetxds-peers-bin-');
  const dir = projectPath('bench', 'peers');
  for (const cmd of ['gcpserver', 'fanout'])
    execFileSync('go', ['build', '-o', join(out, cmd), `./${cmd}`], { cwd: dir, stdio: 'inherit' });
  return { gcpServer: join(out, 'gcpserver'), fanout: join(out, 'fanout') };
}

/** A process that prints JSON events, one per line. */
interface Running {
  pid: number;
  port: number;
  /** Applies a change; returns when it was started. */
  change(apply: (cfg: string) => void): Promise<number>;
  /**
   * After a change: when it was published, the CPU seconds spent before that (not the push's), and
   * how long the server's own loop over the streams took (NaN where the server does not say).
   */
  published(started: number): { at: number; cpuBefore: number; loopMs: number };
  stop(): Promise<void>;
}

function render(cfg: string, file: string): void {
  const json = execFileSync(
    process.execPath,
    ['--import', 'tsx', projectPath('src', 'cli', 'main.ts'), 'render', cfg],
    {
      cwd: projectPath(),
      maxBuffer: 1 << 28,
    },
  );
  writeFileSync(file, json);
}

/** How fleetxds is run: its serving threads (grpc.threads), the cores it may use, the client's cores. */
export interface FleetxdsLayout {
  threads: number;
  cores: string;
  clientCores: string;
}
export const ONE_CORE: FleetxdsLayout = { threads: 1, cores: SERVER_CORE, clientCores: CLIENT_CORE };

async function startPeer(
  name: PeerName,
  services: number,
  bin: { gcpServer: string },
  layout: FleetxdsLayout,
): Promise<Running> {
  if (name === 'fleetxds' || name === 'fleetxds-grpc-js') {
    // fleetxds-grpc-js: the same server with grpc-js's gRPC server under the xDS methods (bench grpc-server).
    const grpc =
      name === 'fleetxds'
        ? `{ listen: 127.0.0.1:0, threads: ${layout.threads} }`
        : '{ listen: 127.0.0.1:0, implementation: grpc-js }';
    const { server, cfg } = await benchServer(services, '', grpc);
    pin(server.child.pid!, layout.cores);
    return {
      pid: server.child.pid!,
      port: server.grpcPort,
      change: async (apply) => {
        const t0 = Date.now();
        apply(cfg);
        return t0;
      },
      published: (started) => {
        const applied = server
          .output()
          .split('\n')
          .filter((l) => l.includes('"applied config version"'))
          .map((l) => JSON.parse(l) as { time: number; publishMs: number; cpuMs: number })
          .find((l) => l.time >= started);
        if (!applied) throw new Error('fleetxds did not log the applied version');
        return { at: applied.time - applied.publishMs, cpuBefore: applied.cpuMs / 1000, loopMs: applied.publishMs };
      },
      // SIGTERM when profiling: the CPU profile is written at exit.
      stop: async () => void (await server.stop(process.env.FLEETXDS_CPU_PROF ? 'SIGTERM' : 'SIGKILL')),
    };
  }
  const dir = tempDir('fleetxds-peers-');
  const cfg = join(dir, 'cfg');
  generateTree(cfg, { services, routesPerVhost: 100 });
  const file = join(dir, 'rendered.json');
  render(cfg, file);
  const events =
    name === 'go-control-plane'
      ? new EventProcess(
          spawn(bin.gcpServer, ['-resources', file], {
            env: { ...process.env, GOMAXPROCS: '1' },
            stdio: ['ignore', 'pipe', 'pipe'],
          }),
        )
      : libHarness('bare-h2-ads.ts', [file]);
  const { child } = events;
  let loopMs = NaN;
  const { port } = await events.next('listening', 60_000);
  pin(child.pid!, SERVER_CORE);
  return {
    pid: child.pid!,
    port,
    change: async (apply) => {
      apply(cfg);
      render(cfg, file);
      const prepared = events.next('prepared', 60_000);
      child.kill('SIGUSR1');
      await prepared;
      const t0 = Date.now();
      child.kill('SIGHUP');
      loopMs = Number((await events.next('published', 60_000)).loopMs ?? NaN); // go-control-plane does not say
      return t0;
    },
    published: (started) => ({ at: started, cpuBefore: 0, loopMs }),
    stop: async () => {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

export async function peerRun(
  name: PeerName,
  n: number,
  services: number,
  bin: ReturnType<typeof buildGoHarness>,
  layout: FleetxdsLayout = ONE_CORE,
  changes = CHANGES_PER_RUN,
  shape: ClientShape = 'batching',
): Promise<PeerResult> {
  const server = await startPeer(name, services, bin, layout);
  await sleep(500);
  const idle = procStats(server.pid).rssMB;
  const client = spawnClient(shape, bin.fanout, server.port, n, layout.clientCores);
  try {
    await client.next('ready');
    await sleep(1000);
    const held = procStats(server.pid).rssMB;
    const measure = async (start: () => Promise<number>, isChange = true): Promise<Measured> => {
      const before = procStats(server.pid).cpuSeconds;
      const threadsBefore = threadCpu(server.pid);
      const got = client.next('got');
      const t0 = await start();
      const { at, bytes } = await got;
      await sleep(300); // the last ACKs are part of the push's cost
      const published = isChange ? server.published(t0) : { at: t0, cpuBefore: 0, loopMs: NaN };
      const cpu = procStats(server.pid).cpuSeconds - before - published.cpuBefore;
      const threads = splitByThread(threadsBefore, threadCpu(server.pid), published.cpuBefore);
      const p99 = (from: number) =>
        percentile(
          (at as number[]).map((t) => t - from),
          99,
        );
      const avg = (bytes as number[]).reduce((a, b) => a + b, 0) / bytes.length;
      await sleep(200);
      return {
        p99: p99(published.at),
        fromWrite: p99(t0),
        cpu: Number(cpu.toFixed(2)),
        loopMs: published.loopMs,
        bytes: Math.round(avg),
        threads,
      };
    };
    const watch = async (typeUrl: string) => {
      const watching = client.next('watching');
      client.send({ cmd: 'watch', type: typeUrl });
      await watching;
    };
    const repeated = async (typeUrl: string, change: (k: number) => (cfg: string) => void) => {
      const each: Measured[] = [];
      for (let k = 0; k < changes; k++) {
        await watch(typeUrl);
        each.push(await measure(() => server.change(change(k))));
      }
      return { ...medianMeasure(each), spread: spreadOf(each) };
    };
    const route = await repeated(TypeUrls.route, (k) => changeRoute(services, k));
    const endpoint = await repeated(TypeUrls.endpoint, changeEndpoint);
    const storm = await measure(async () => {
      const t0 = Date.now();
      client.send({ cmd: 'storm' });
      return t0;
    }, false);
    return {
      server: name,
      client: shape,
      services,
      n,
      routeP99: route.p99,
      fromWriteP99: route.fromWrite,
      routeCpu: route.cpu,
      routeLoopMs: Math.round(route.loopMs),
      endpointP99: endpoint.p99,
      endpointCpu: endpoint.cpu,
      endpointBytes: endpoint.bytes,
      stormP99: storm.p99,
      stormCpu: storm.cpu,
      kbPerStream: Math.round(((held - idle) * 1024) / n),
      spread: {
        routeP99: route.spread.p99,
        routeCpu: route.spread.cpu,
        endpointP99: endpoint.spread.p99,
        endpointCpu: endpoint.spread.cpu,
      },
      ...(name === 'fleetxds'
        ? { threads: { route: route.threads, endpoint: endpoint.threads, storm: storm.threads } }
        : {}),
    };
  } finally {
    client.child.kill('SIGKILL');
    await server.stop();
  }
}
