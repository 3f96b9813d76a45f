import { isUtf8 } from 'node:buffer';
import type { Dirent } from 'node:fs';
import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import { PARALLEL_MIN_WORK, parseBatch, parseWork, ParseWorkers, type PoolStats } from './parse-pool.ts';
import { documentBound, MAX_DOCUMENTS_PER_FILE, MAX_DOCUMENTS_PER_TREE } from './parse-yaml.ts';
import type { ParseJob } from './parse-worker.ts';
import { SourceCache } from './source-cache.ts';
import type { ParsedFile, SourceSet } from '../model/sources.ts';

export interface TreeLimits {
  /** Largest single YAML file accepted (bytes). */
  maxFileBytes: number;
  /** Largest whole tree accepted (bytes). */
  maxTreeBytes: number;
  maxFiles: number;
}

export const DEFAULT_LIMITS: TreeLimits = {
  maxFileBytes: 4 * 1024 * 1024,
  maxTreeBytes: 256 * 1024 * 1024,
  maxFiles: 50_000,
};

/** Editors' and git's transient files; never part of the config. */
export function isIgnoredName(name: string): boolean {
  return (
    name.startsWith('.') ||
    name.endsWith('~') ||
    name.endsWith('.swp') ||
    name.endsWith('.swx') ||
    name.endsWith('.tmp') ||
    name.startsWith('#')
  );
}

export function isConfigFile(name: string): boolean {
  return /\.ya?ml$/i.test(name) && !isIgnoredName(name);
}

/**
 * Read errors that say nothing about the tree: the process or the file system was short of
 * something for a moment (descriptors, memory, an NFS server), or a file or folder listed a moment
 * ago was gone when read (a checkout under way). A read that meets one is incomplete, not invalid:
 * the pipeline reads the tree again soon instead of rejecting it (src/app/read-retry.ts). The
 * config directory itself missing is not one: that is the tree's state, reported as unreadable.
 */
const PASSING_READ_ERRORS = new Set([
  'EMFILE',
  'ENFILE',
  'EAGAIN',
  'EBUSY',
  'EINTR',
  'ENOMEM',
  'ETIMEDOUT',
  'EIO',
  'ESTALE',
  'ENOENT',
]);

export function passingReadError(err: unknown): boolean {
  return PASSING_READ_ERRORS.has(String((err as NodeJS.ErrnoException | undefined)?.code));
}

/** What reading a tree found wrong so far. */
class ReadProblems {
  readonly diagnostics: Diagnostic[] = [];
  /** The first passing error (see PASSING_READ_ERRORS). */
  incomplete?: string;

  /** A file or folder that could not be read: a diagnostic, and an incomplete read if the error passes. */
  unreadable(err: unknown, message: string, file?: string, passing = passingReadError(err)): void {
    if (passing) this.incomplete ??= file ? `${file}: ${message}` : message;
    this.diagnostics.push({
      code: Codes.FILE_UNREADABLE,
      severity: 'error',
      message,
      ...(file && { location: { file, line: 1, column: 1 } }),
    });
  }

  /** A read that hands on no files: only why (and, when the reason passes, that it is incomplete). */
  nothingRead(root: string): SourceSet {
    const { diagnostics, incomplete } = this;
    return { root, treeHash: sha256Hex(''), files: [], diagnostics, ...(incomplete && { incomplete }) };
  }
}

interface Entry {
  rel: string;
  abs: string;
  hash: string;
  /** The bytes, when they had to be read for hashing anyway. */
  bytes?: Buffer;
  /** Their parse work (parseWork), when no parse of them is kept: weighed once, while reading. */
  work?: number;
}

/**
 * Reads every YAML file below `dir` (recursively, skipping dot-folders such as .git) and parses it.
 * The directory is resolved once up front so a symlink swap of `dir` during the read cannot mix two
 * trees. Symlinked files inside the tree are refused: they could point anywhere on the host.
 * With `unlessTreeHash`, nothing is parsed when the tree still has that hash (`unchanged` is set).
 */
export async function readTree(
  dir: string,
  limits: TreeLimits = DEFAULT_LIMITS,
  opts: ReadOptions = {},
): Promise<SourceSet & { unchanged?: true }> {
  const pool: { workers?: ParseWorkers } = {};
  try {
    return await readTreeWith(pool, dir, limits, opts);
  } finally {
    pool.workers?.close(); // unused: the tree was unchanged, or too little of it needed a parse
  }
}

interface ReadOptions {
  unlessTreeHash?: string | (string | undefined)[];
  cache?: SourceCache;
  /** Counts what the parse threads did. */
  parseStats?: PoolStats;
  /** Parse work from which files are parsed on every core (PARALLEL_MIN_WORK). */
  parallelMinWork?: number;
}

async function readTreeWith(
  pool: { workers?: ParseWorkers },
  dir: string,
  limits: TreeLimits,
  opts: ReadOptions,
): Promise<SourceSet & { unchanged?: true }> {
  const cache = opts.cache ?? new SourceCache();
  const problems = new ReadProblems();
  const { diagnostics } = problems;
  let root: string;
  try {
    root = await realpath(dir);
  } catch (err) {
    // A missing config directory is the tree's state, not a passing error.
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    const message = `config directory ${dir} is not readable: ${(err as Error).message}`;
    problems.unreadable(err, message, undefined, !missing && passingReadError(err));
    return problems.nothingRead(dir);
  }
  const paths: string[] = [];
  await walk(root, root, paths, problems, limits);
  paths.sort();
  const entries = await readEntries(root, paths, limits, cache, problems, pool, opts);
  // Nothing is judged (or forgotten: the stamps and parses of the files not read) before a full read.
  if (problems.incomplete) return problems.nothingRead(root);
  cache.pruneStamps(entries.map((e) => e.abs));
  const treeHash = combineHashes(entries.map((e) => ({ file: e.rel, hash: e.hash })));
  if (
    (Array.isArray(opts.unlessTreeHash) ? opts.unlessTreeHash.includes(treeHash) : opts.unlessTreeHash === treeHash) &&
    diagnostics.length === 0
  )
    return { root, treeHash, files: [], diagnostics, unchanged: true };
  const { slots, pending } = await collectParses(entries, cache, problems);
  // The tree's documents, counted before any parse: those of kept parses, and each new file's bound.
  let documents = 0;
  for (const f of slots) documents += f?.documents.length ?? 0;
  for (const p of pending) documents += Math.min(documentBound(p.job.text), MAX_DOCUMENTS_PER_FILE + 1);
  if (documents > MAX_DOCUMENTS_PER_TREE) {
    diagnostics.push({
      code: Codes.YAML_LIMIT,
      severity: 'error',
      message: `the tree holds up to ${documents} documents; the limit is ${MAX_DOCUMENTS_PER_TREE}`,
    });
    return { root, treeHash, files: [], diagnostics };
  }
  const parsed = await parseBatch(
    pending.map((p) => p.job),
    {
      workers: pool.workers,
      ...(opts.parseStats && { stats: opts.parseStats }),
      ...(opts.parallelMinWork !== undefined && { minWork: opts.parallelMinWork }),
    },
  );
  if (problems.incomplete) return problems.nothingRead(root);
  pending.forEach((p, i) => (slots[p.slot] = cache.adopt(parsed[i]!)));
  const files = slots as ParsedFile[];
  cache.retainOnly(files);
  return { root, treeHash, files, diagnostics };
}

/**
 * Stats every file, and reads and hashes those whose stamp changed; the parse threads start once
 * the files read so far hold enough text no parse is kept of (their start overlaps the rest).
 */
async function readEntries(
  root: string,
  paths: readonly string[],
  limits: TreeLimits,
  cache: SourceCache,
  problems: ReadProblems,
  pool: { workers?: ParseWorkers },
  opts: ReadOptions,
): Promise<Entry[]> {
  const { diagnostics } = problems;
  const entries: Entry[] = [];
  let total = 0;
  let unparsed = 0;
  // Stats in parallel: one at a time, 10,000 files cost 10,000 round trips to the thread pool.
  const absolute = paths.map((rel) => join(root, ...rel.split('/')));
  const stats = await Promise.all(absolute.map((abs) => lstat(abs, { bigint: true }).catch((err: Error) => err)));
  for (const [i, rel] of paths.entries()) {
    const abs = absolute[i]!;
    try {
      const st = stats[i]!;
      if (st instanceof Error) throw st;
      if (st.size > BigInt(limits.maxFileBytes)) {
        diagnostics.push({
          code: Codes.YAML_LIMIT,
          severity: 'error',
          message: `file is ${st.size} bytes; the limit is ${limits.maxFileBytes}`,
          location: { file: rel, line: 1, column: 1 },
        });
        continue;
      }
      total += Number(st.size);
      if (total > limits.maxTreeBytes) {
        diagnostics.push({
          code: Codes.YAML_LIMIT,
          severity: 'error',
          message: `tree is larger than ${limits.maxTreeBytes} bytes`,
        });
        break;
      }
      const known = cache.hashIfUnchanged(abs, st);
      if (known) {
        entries.push({ rel, abs, hash: known });
      } else {
        const bytes = await readFile(abs);
        const hash = sha256Hex(bytes);
        cache.stamp(abs, { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, hash });
        const work = cache.hasParse(rel, hash) ? undefined : parseWork(bytes);
        entries.push({ rel, abs, hash, bytes, work });
        if (!pool.workers && work && (unparsed += work) >= (opts.parallelMinWork ?? PARALLEL_MIN_WORK))
          pool.workers = ParseWorkers.start();
      }
    } catch (err) {
      problems.unreadable(err, (err as Error).message, rel);
    }
  }
  return entries;
}

/** Each file's parse: kept from before, or a job for the parse (a file that is not UTF-8 is refused at its byte). */
async function collectParses(
  entries: readonly Entry[],
  cache: SourceCache,
  problems: ReadProblems,
): Promise<{ slots: (ParsedFile | undefined)[]; pending: { slot: number; job: ParseJob }[] }> {
  const { diagnostics } = problems;
  const slots: (ParsedFile | undefined)[] = [];
  const pending: { slot: number; job: ParseJob }[] = [];
  for (const e of entries) {
    let parsed = cache.parsedFile(e.rel, e.hash);
    if (!parsed) {
      try {
        const bytes = e.bytes ?? (await readFile(e.abs));
        const bad = firstInvalidUtf8(bytes);
        if (bad !== undefined) {
          // Decoding would silently turn it into U+FFFD and serve that: refuse, pointing at it.
          const before = bytes.subarray(0, bad).toString('utf8').split('\n');
          const location = { file: e.rel, line: before.length, column: before[before.length - 1]!.length + 1 };
          diagnostics.push({
            code: Codes.YAML_SYNTAX,
            severity: 'error',
            message:
              `not valid UTF-8: byte 0x${bytes[bad]!.toString(16).padStart(2, '0')} at offset ${bad}; ` +
              `YAML files must be UTF-8`,
            location,
          });
          continue;
        }
        const text = bytes.toString('utf8');
        parsed = cache.lookup(e.rel, text, e.hash);
        if (!parsed) {
          const job = { file: e.rel, text, hash: e.hash, work: e.work, previous: cache.previousParse(e.rel) };
          pending.push({ slot: slots.length, job });
        }
      } catch (err) {
        problems.unreadable(err, (err as Error).message, e.rel);
        continue;
      }
    }
    slots.push(parsed);
  }
  return { slots, pending };
}

function combineHashes(files: readonly { file: string; hash: string }[]): string {
  return sha256Hex(files.map((f) => `${f.file}\u0000${f.hash}`).join('\n'));
}

async function walk(
  root: string,
  dir: string,
  out: string[],
  problems: ReadProblems,
  limits: TreeLimits,
): Promise<void> {
  const { diagnostics } = problems;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    problems.unreadable(err, `cannot list ${relative(root, dir) || '.'}: ${(err as Error).message}`);
    return;
  }
  for (const e of entries) {
    if (isIgnoredName(e.name)) continue;
    const abs = join(dir, e.name);
    const rel = relative(root, abs).split(sep).join('/');
    if (e.isDirectory()) {
      await walk(root, abs, out, problems, limits);
    } else if (e.isSymbolicLink()) {
      if (isConfigFile(e.name)) {
        diagnostics.push({
          code: Codes.FILE_UNREADABLE,
          severity: 'error',
          message: 'symbolic links inside the config tree are refused (they could point outside it)',
          location: { file: rel, line: 1, column: 1 },
        });
      }
    } else if (e.isFile() && isConfigFile(e.name)) {
      if (out.length >= limits.maxFiles) {
        diagnostics.push({
          code: Codes.YAML_LIMIT,
          severity: 'error',
          message: `more than ${limits.maxFiles} YAML files`,
        });
        return;
      }
      out.push(rel);
    }
  }
}

/** Offset of the first byte that is not part of a valid UTF-8 sequence, or undefined. */
export function firstInvalidUtf8(b: Uint8Array): number | undefined {
  if (isUtf8(b)) return undefined;
  for (let i = 0; i < b.length;) {
    const c = b[i]!;
    const n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n === 0 || i + n > b.length || !isUtf8(b.subarray(i, i + n))) return i;
    i += n;
  }
  return undefined;
}
