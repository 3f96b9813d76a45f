/**
 * Serving xDS over gRPC, in the main thread or spread over serving threads.
 *
 * With `threads: 1` the main thread serves every stream, beside the config pipeline. With more,
 * each serving thread runs its own gRPC server on the same port (SO_REUSEPORT: the kernel spreads
 * new connections over the threads' listening sockets, so no thread hands connections to another),
 * is fed every published config by the main thread (thread-feed.ts: the encoded bytes once, in
 * shared memory) and relays what its streams report to the main thread's node registry
 * (registry-relay.ts). A thread that dies is started again and brought up to the current config;
 * its proxies reconnect (to any thread) as they would after a restart.
 */
import { availableParallelism } from 'node:os';
import { createServer } from 'node:net';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { splitListen } from '../../config/server-config.ts';
import type { ListenerTls } from '../../security/listener-tls.ts';
import type { SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import type { NodeRegistry } from '../../status/node-registry.ts';
import { GroupAckTracker } from '../group-ack-tracker.ts';
import { RelayedStreams, type RelayedEvent } from './registry-relay.ts';
import { createGrpcServer, sharedStreamSlots, type GrpcServerOptions } from './server.ts';
import { FeedWriter, type FeedMessage } from './thread-feed.ts';

/** What a serving thread is started with (plain data: it is cloned into the thread). */
export interface ThreadSettings {
  index: number;
  host: string;
  /** The certificate the thread starts with (the current one, for a thread started again). */
  tls?: ListenerTls;
  logLevel: string;
  serveLastAckedOnNack: boolean;
  server: Omit<GrpcServerOptions, 'cache' | 'registry' | 'log' | 'acks' | 'tls'>;
}

/** Main thread -> serving thread. */
export type ToThread =
  | { type: 'publish'; feed: FeedMessage }
  | { type: 'listen'; port: number }
  | { type: 'learn'; events: RelayedEvent[] }
  | { type: 'tls'; tls: ListenerTls }
  | { type: 'end'; reason: string };

/** Serving thread -> main thread. */
export type FromThread =
  | { type: 'listening'; port: number }
  | { type: 'events'; events: RelayedEvent[] }
  | { type: 'ended' }
  | { type: 'failed'; message: string };

export interface GrpcServing {
  readonly port: number;
  /** How many threads serve streams (1: the main thread). */
  readonly threads: number;
  /** Open streams of each serving thread. */
  streamsByThread(): number[];
  /** Ends every open stream with UNAVAILABLE and stops serving. */
  close(reason: string): Promise<void>;
  /** New connections, on every serving thread, get this certificate; open ones keep theirs. */
  setTls(tls: ListenerTls): void;
}

export interface ServeGrpcOptions {
  listen: string;
  /** Serving threads; 'auto': one per core. 1 serves in the main thread. */
  threads: number | 'auto';
  tls?: ListenerTls;
  logLevel: string;
  serveLastAckedOnNack: boolean;
  server: ThreadSettings['server'];
  cache: SnapshotCache;
  registry: NodeRegistry;
  log: Logger;
  /** The serving thread's module (tests give one that fails on purpose). */
  workerUrl?: URL;
}

export async function serveGrpc(o: ServeGrpcOptions): Promise<GrpcServing> {
  const threads = o.threads === 'auto' ? availableParallelism() : o.threads;
  return threads > 1 ? startThreads(o, threads) : serveInProcess(o);
}

async function serveInProcess(o: ServeGrpcOptions): Promise<GrpcServing> {
  const grpc = createGrpcServer({
    ...o.server,
    cache: o.cache,
    registry: o.registry,
    acks: new GroupAckTracker(o.serveLastAckedOnNack),
    log: o.log,
    tls: o.tls,
  });
  const { host, port: wanted } = splitListen(o.listen);
  const port = await grpc.listen(host, wanted);
  return {
    port,
    threads: 1,
    streamsByThread: () => [o.registry.connected().length],
    close: (reason) => grpc.close(reason),
    setTls: (tls) => grpc.setTls(tls),
  };
}

/** The worker beside this module: .ts when run from source (tsx), .js when built. */
const WORKER_URL = new URL(`./serving-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);
const RESTART_DELAY_MS = 1000;

interface Thread {
  worker: Worker;
  streams: RelayedStreams;
}

async function startThreads(o: ServeGrpcOptions, count: number): Promise<GrpcServing> {
  const { host, port: wanted } = splitListen(o.listen);
  // SO_REUSEPORT would also let another server of the same user share the port unnoticed: claim
  // it plainly first, so a second fleetxds on it fails here as it would without threads.
  if (wanted !== 0) await claimable(host, wanted);
  const writer = new FeedWriter();
  const threads: (Thread | undefined)[] = [];
  let closing = false;
  let port = wanted;
  const slots = sharedStreamSlots(count);
  let tls = o.tls;

  const start = (index: number): Promise<number> => {
    const settings: ThreadSettings = {
      index,
      host,
      tls,
      logLevel: o.logLevel,
      serveLastAckedOnNack: o.serveLastAckedOnNack,
      server: { ...o.server, streamCount: { slots, slot: index } },
    };
    const worker = new Worker(o.workerUrl ?? WORKER_URL, { workerData: settings });
    const thread: Thread = { worker, streams: new RelayedStreams(o.registry) };
    threads[index] = thread;
    if (o.cache.current) send(thread, { type: 'publish', feed: new FeedWriter().next(o.cache.current) });
    send(thread, { type: 'listen', port });
    return new Promise((resolve, reject) => {
      worker.on('message', (m: FromThread) => {
        if (m.type === 'listening') resolve(m.port);
        else if (m.type === 'failed') reject(new Error(`serving thread ${index}: ${m.message}`));
        else if (m.type === 'events') {
          const facts = thread.streams.apply(m.events);
          if (facts.length) for (const t of threads) if (t && t !== thread) send(t, { type: 'learn', events: facts });
        }
      });
      worker.on('error', (err) => {
        o.log.error({ err, thread: index }, 'serving thread failed');
        reject(err);
      });
      worker.on('exit', (code) => {
        thread.streams.closeAll();
        Atomics.store(slots, index, 0);
        if (threads[index] === thread) threads[index] = undefined;
        if (closing) return;
        o.log.error({ thread: index, code }, 'serving thread exited; starting it again');
        setTimeout(() => {
          if (!closing)
            start(index).catch((err: unknown) => o.log.error({ err, thread: index }, 'serving thread did not start'));
        }, RESTART_DELAY_MS).unref();
      });
    });
  };

  // The writer always stands at the current config, and a thread starting is given that config
  // whole: every later message of the writer then applies to it.
  if (o.cache.current) writer.next(o.cache.current);
  const unsubscribe = o.cache.onPublish((cfg) => {
    const feed = writer.next(cfg);
    for (const t of threads) if (t) send(t, { type: 'publish', feed });
  });
  try {
    port = await start(0);
    await Promise.all(Array.from({ length: count - 1 }, (_, i) => start(i + 1)));
  } catch (err) {
    closing = true;
    unsubscribe();
    await Promise.all(threads.flatMap((t) => (t ? [t.worker.terminate()] : [])));
    throw err;
  }
  o.log.info({ threads: count, port }, 'serving gRPC on several threads');

  return {
    port,
    threads: count,
    streamsByThread: () => threads.map((t) => t?.streams.size ?? 0),
    setTls(next) {
      if (!tls) throw new Error('this gRPC server does not serve TLS');
      tls = next;
      for (const t of threads) if (t) send(t, { type: 'tls', tls: next });
    },
    async close(reason) {
      closing = true;
      unsubscribe();
      await Promise.all(
        threads.map(async (t) => {
          if (!t) return;
          const ended = new Promise<void>((resolve) => {
            t.worker.on('message', (m: FromThread) => m.type === 'ended' && resolve());
            t.worker.once('exit', () => resolve());
          });
          send(t, { type: 'end', reason });
          await ended;
          await t.worker.terminate();
        }),
      );
    },
  };
}

function send(t: Thread, m: ToThread): void {
  t.worker.postMessage(m);
}

/** Fails (EADDRINUSE) when something listens on the port already. */
function claimable(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port }, () => probe.close(() => resolve()));
  });
}
