/**
 * Parsing on every core: `yaml` needs about 2.4 s for 10,000 services on one, which is most of a
 * cold start. A large batch of files (a first start, a new machine) is split by size between the
 * main thread and short-lived workers, one per other core; small batches (a push) parse inline,
 * where starting a worker would cost more than it saves. Workers live for one batch: cold parses
 * are rare, and idle workers would hold memory for nothing.
 */
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ParsedFile } from '../model/sources.ts';
import type { ParseJob } from './parse-worker.ts';
import { parseYamlFile } from './parse-yaml.ts';

export interface PoolStats {
  inWorkers: number;
  fellBack: number;
}

/** Below this much text a batch parses inline (parsed in about 150 ms; a worker takes about 30 ms to start). */
export const PARALLEL_MIN_BYTES = 256 * 1024;

/** The worker beside this module: .ts when run from source (tsx), .js when built. */
const WORKER_URL = new URL(`./parse-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/**
 * Parses `jobs`, in order. `threads`: how many threads may parse (the main one included); the
 * main thread yields between its files, so the xDS servers keep answering during a long parse.
 */
export async function parseBatch(
  jobs: readonly ParseJob[],
  {
    threads = availableParallelism(),
    stats = { inWorkers: 0, fellBack: 0 },
    workerUrl = WORKER_URL,
  }: {
    threads?: number;
    /** Counts shares parsed by workers, and those a failed worker left to the main thread. */
    stats?: PoolStats;
    workerUrl?: URL;
  } = {},
): Promise<ParsedFile[]> {
  const bytes = jobs.reduce((a, j) => a + j.text.length, 0);
  const workers = bytes < PARALLEL_MIN_BYTES ? 0 : Math.max(0, Math.min(threads - 1, jobs.length - 1));
  const shares = split(jobs, workers + 1);
  const remote = shares.slice(1).map((share) => inWorker(share, stats, workerUrl));
  const local = await inline(shares[0]!);
  const out = new Map<ParseJob, ParsedFile>(local.map((p, i) => [shares[0]![i]!, p]));
  (await Promise.all(remote)).forEach((parsed, w) => parsed.forEach((p, i) => out.set(shares[w + 1]![i]!, p)));
  return jobs.map((j) => out.get(j)!);
}

/** `n` shares of about equal text size (largest files first, each to the smallest share). */
function split(jobs: readonly ParseJob[], n: number): ParseJob[][] {
  const shares = Array.from({ length: n }, () => ({ jobs: [] as ParseJob[], bytes: 0 }));
  for (const j of [...jobs].sort((a, b) => b.text.length - a.text.length)) {
    const s = shares.reduce((min, x) => (x.bytes < min.bytes ? x : min));
    s.jobs.push(j);
    s.bytes += j.text.length;
  }
  return shares.map((s) => s.jobs);
}

async function inline(jobs: readonly ParseJob[]): Promise<ParsedFile[]> {
  const out: ParsedFile[] = [];
  let sliceStart = performance.now();
  for (const j of jobs) {
    // Parsing a large tree must not starve the xDS servers or the watchdog: yield every ~20 ms.
    if (performance.now() - sliceStart > 20) {
      await new Promise<void>((r) => setImmediate(r));
      sliceStart = performance.now();
    }
    out.push(parseYamlFile(j.file, j.text, j.hash, j.previous));
  }
  return out;
}

/** One worker for one share; if it cannot run (or dies), the share is parsed here instead. */
function inWorker(jobs: readonly ParseJob[], stats: PoolStats, url: URL): Promise<ParsedFile[]> {
  return new Promise<Pick<ParsedFile, 'documents' | 'diagnostics'>[]>((resolve, reject) => {
    const worker = new Worker(url);
    worker.once('message', (r: Pick<ParsedFile, 'documents' | 'diagnostics'>[]) => {
      resolve(r);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`parse worker exited with code ${code}`)));
    // Without `previous`: its documents would be copied over, and their values are kept by identity.
    worker.postMessage(jobs.map(({ file, text, hash }) => ({ file, text, hash })));
  }).then(
    (parsed) => {
      stats.inWorkers++;
      return parsed.map((p, i) => ({ file: jobs[i]!.file, hash: jobs[i]!.hash, text: jobs[i]!.text, ...p }));
    },
    (err: Error) => {
      stats.fellBack++;
      // Still correct, only slower: said where an operator sees it (stderr, the journal).
      process.emitWarning(`a parse worker failed (${err.message}); its files are parsed on the main thread`, {
        code: 'FLEETXDS_PARSE_WORKER',
      });
      return inline(jobs);
    },
  );
}
