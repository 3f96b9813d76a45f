/**
 * Parsing on every core, for batches large enough to gain from it. Most files take the fast path
 * (src/source/fast-yaml.ts); files that only yaml parses take several times as long. A large
 * batch of files (a first start, a new machine) is parsed by the main thread and short-lived
 * workers, one per other core, taking files from one queue: each thread takes more as it
 * finishes, so a worker that starts late or a core the VM shares does not leave the others
 * waiting at the end. Smaller batches parse inline, where starting a worker and copying its
 * values back would cost more than it saves. Workers live for one batch: cold parses are rare,
 * and idle workers would hold memory for nothing.
 */
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ParsedFile } from '../model/sources.ts';
import type { ParseJob } from './parse-worker.ts';
import { likelyLeftToYaml } from './fast-yaml.ts';
import { parseYamlFile } from './parse-yaml.ts';

export interface PoolStats {
  /** Files parsed by workers. */
  inWorkers: number;
  /** Workers that parsed at least one file. */
  workers: number;
  /** Workers that failed (their files were parsed on the main thread). */
  fellBack: number;
}

/**
 * Below this much parse work (see `parseWork`) a batch parses inline: under it, a worker's start and
 * the copy of its values back cost as much as the parsing it takes over (`npm run bench -- pipeline`
 * measures both sides of the line).
 */
export const PARALLEL_MIN_WORK = 8 * 1024 * 1024;
/** How much longer yaml takes than the fast path on the same text. */
const YAML_SLOWDOWN = 8;

/**
 * A file's parse work, in bytes of the fast path: its size, or YAML_SLOWDOWN times that when it
 * is likely to be left to yaml (likelyLeftToYaml in fast-yaml.ts).
 */
export function parseWork(text: string | Uint8Array): number {
  return text.length * (likelyLeftToYaml(text) ? YAML_SLOWDOWN : 1);
}

/**
 * Text sent to a worker at a time: small enough that the threads finish together, large enough
 * that messages cost nothing beside it. Each worker has two in hand, so it never waits for the
 * main thread, which hands out more only between its own files.
 */
const CHUNK_BYTES = 64 * 1024;
const CHUNKS_IN_HAND = 2;

/** The worker beside this module: .ts when run from source (tsx), .js when built. */
const WORKER_URL = new URL(`./parse-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export interface PoolOptions {
  /** How many threads may parse (the main one included). */
  threads?: number;
  /** Parse work below which a batch parses inline (PARALLEL_MIN_WORK). */
  minWork?: number;
  stats?: PoolStats;
  workerUrl?: URL;
}

/**
 * Workers for a batch, started before its files are read: a worker's start then overlaps reading
 * and hashing the tree. Each is used by one `parseBatch` or closed.
 */
export class ParseWorkers {
  private constructor(readonly workers: StartedWorker[]) {}

  /** Starts one worker per thread beyond the main one. */
  static start({ threads = availableParallelism(), workerUrl = WORKER_URL }: PoolOptions = {}): ParseWorkers {
    return new ParseWorkers(Array.from({ length: Math.max(0, threads - 1) }, () => new StartedWorker(workerUrl)));
  }

  close(): void {
    for (const w of this.workers.splice(0)) void w.worker.terminate();
  }
}

/** A worker and how it ended, if it did: it may fail before anything listens for its messages. */
class StartedWorker {
  readonly worker: Worker;
  /** Settles when the worker fails or exits (it never does before it is told to, when healthy). */
  readonly ended: Promise<Error>;

  constructor(url: URL) {
    this.worker = new Worker(url);
    this.ended = new Promise<Error>((resolve) => {
      this.worker.once('error', resolve);
      this.worker.once('exit', (code) => resolve(new Error(`parse worker exited with code ${code}`)));
    });
  }
}

/**
 * Parses `jobs`, in order. The main thread yields between its files, so the xDS servers keep
 * answering during a long parse. `workers`: started earlier for this batch (used or closed here).
 */
export async function parseBatch(
  jobs: readonly ParseJob[],
  { workers: started, ...opts }: PoolOptions & { workers?: ParseWorkers } = {},
): Promise<ParsedFile[]> {
  const stats = opts.stats ?? { inWorkers: 0, workers: 0, fellBack: 0 };
  const work = jobs.reduce((a, j) => a + (j.work ?? parseWork(j.text)), 0);
  const pool =
    work < (opts.minWork ?? PARALLEL_MIN_WORK) || jobs.length < 2 ? undefined : (started ?? ParseWorkers.start(opts));
  if (!pool) started?.close();
  // Largest first: the last files taken are small, so the threads finish close together.
  const queue = new Queue(pool ? [...jobs].sort((a, b) => b.text.length - a.text.length) : jobs);
  const out = new Map<ParseJob, ParsedFile>();
  const remote = pool?.workers.splice(0).map((w) => feed(w, queue, out, stats)) ?? [];
  await inline(queue, out);
  // A failed worker's files, parsed here.
  await inline(new Queue((await Promise.all(remote)).flat()), out);
  return jobs.map((j) => out.get(j)!);
}

/** The files not yet taken by any thread. */
class Queue {
  private next = 0;

  constructor(private readonly jobs: readonly ParseJob[]) {}

  take(): ParseJob | undefined {
    return this.jobs[this.next++];
  }

  /** Files of about CHUNK_BYTES (at least one while any is left). */
  chunk(): ParseJob[] {
    const out: ParseJob[] = [];
    let size = 0;
    for (let j: ParseJob | undefined; size < CHUNK_BYTES && (j = this.take()); size += j.text.length) out.push(j);
    return out;
  }
}

/** The main thread's share: files from `queue` until it is empty. */
async function inline(queue: Queue, out: Map<ParseJob, ParsedFile>): Promise<void> {
  let sliceStart = performance.now();
  for (let j = queue.take(); j; j = queue.take()) {
    // Parsing a large tree must not starve the xDS servers or the watchdog: yield every ~20 ms.
    if (performance.now() - sliceStart > 20) {
      await new Promise<void>((r) => setImmediate(r));
      sliceStart = performance.now();
    }
    out.set(j, parseYamlFile(j.file, j.text, j.hash, j.previous));
  }
}

/**
 * Keeps one worker busy with chunks from `queue` until it is empty, then ends it. Resolves with
 * the files it could not parse (all it had in hand, if it failed), for the main thread to parse.
 */
function feed(
  { worker, ended }: StartedWorker,
  queue: Queue,
  out: Map<ParseJob, ParsedFile>,
  stats: PoolStats,
): Promise<ParseJob[]> {
  const inHand: ParseJob[][] = [];
  let parsedHere = 0;
  let done = false;
  const send = () => {
    const chunk = queue.chunk();
    if (!chunk.length) return;
    inHand.push(chunk);
    // Without `previous`: its documents would be copied over, and their values are kept by identity.
    worker.postMessage(chunk.map(({ file, text, hash }) => ({ file, text, hash })));
  };
  return new Promise<ParseJob[]>((resolve) => {
    const finish = (failed?: Error) => {
      if (done) return;
      done = true;
      worker.removeAllListeners('message');
      void worker.terminate();
      if (!failed) return resolve([]);
      stats.fellBack++;
      // Still correct, only slower: said where an operator sees it (stderr, the journal).
      process.emitWarning(`a parse worker failed (${failed.message}); its files are parsed on the main thread`, {
        code: 'FLEETXDS_PARSE_WORKER',
      });
      resolve(inHand.flat());
    };
    worker.on('message', (parsed: Pick<ParsedFile, 'documents' | 'diagnostics'>[]) => {
      const chunk = inHand.shift()!;
      parsed.forEach((p, i) =>
        out.set(chunk[i]!, { file: chunk[i]!.file, hash: chunk[i]!.hash, text: chunk[i]!.text, ...p }),
      );
      if (parsedHere === 0) stats.workers++;
      parsedHere += chunk.length;
      stats.inWorkers += chunk.length;
      send();
      if (!inHand.length) finish();
    });
    void ended.then(finish);
    for (let i = 0; i < CHUNKS_IN_HAND; i++) send();
    if (!inHand.length) finish();
  });
}
