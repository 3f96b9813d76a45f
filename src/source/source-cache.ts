/**
 * What the source stage keeps between reads of a tree, owned by one pipeline:
 *  - content hashes by file identity (device, inode, size, mtime in ns): an unchanged file is not
 *    even read again. Editors and git replace files (new inode) or bump mtime, so a change shows;
 *  - parsed files by (path, content hash): a one-file change re-parses one file, not the tree
 *    (parsing is the costliest step of a cold read). Parsed documents are then the very same objects
 *    as last time, which lets validation and translation skip them by identity;
 *  - optionally, a store that keeps parses across restarts (the server's database): a restart, or
 *    the first push after one, parses only what changed.
 */
import type { ParsedFile } from '../model/sources.ts';
import { sha256Hex } from '../shared/hash.ts';
import { parseYamlFile } from './parse-yaml.ts';

/** What a parse holds beyond the file's path, hash and text (which the reader has anyway). */
export type StoredParse = Pick<ParsedFile, 'documents' | 'diagnostics'>;

/** Parses kept outside the process, by path and content hash. */
export interface ParsedFileStore {
  get(file: string, hash: string): StoredParse | undefined;
  /** Whether `get` would find it, without reading it. */
  has(file: string, hash: string): boolean;
  /** Adds `fresh` parses and keeps only those of `live` (the tree just read). */
  save(fresh: readonly ParsedFile[], live: readonly ParsedFile[]): void;
}

export interface FileStamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  hash: string;
}

export class SourceCache {
  private readonly stamps = new Map<string, FileStamp>();
  private readonly parsed = new Map<string, ParsedFile>();
  /** Files parsed, and parses taken from the store instead. */
  readonly stats = { parsed: 0, fromStore: 0 };
  /** Parses made since the last `flush`, for the store, and the files of the last read. */
  private fresh: ParsedFile[] = [];
  private live: readonly ParsedFile[] = [];
  private liveByFile?: Map<string, ParsedFile>;

  constructor(
    private readonly store?: ParsedFileStore,
    /** The store is a cache: when it fails, files are parsed again, and the caller logs why. */
    private readonly onStoreError: (err: unknown, what: 'read' | 'write') => void = () => {},
  ) {}

  /** The content hash of `abs` if the file is unchanged since it was hashed. */
  hashIfUnchanged(abs: string, st: Omit<FileStamp, 'hash'>): string | undefined {
    const k = this.stamps.get(abs);
    const same = k && k.dev === st.dev && k.ino === st.ino && k.size === st.size && k.mtimeNs === st.mtimeNs;
    return same ? k.hash : undefined;
  }

  stamp(abs: string, stamp: FileStamp): void {
    this.stamps.set(abs, stamp);
  }

  /** Forgets files no longer in the tree (only when many are gone: cheap on every read). */
  pruneStamps(live: readonly string[]): void {
    if (this.stamps.size <= live.length * 2 + 1000) return;
    const keep = new Set(live);
    for (const k of [...this.stamps.keys()]) if (!keep.has(k)) this.stamps.delete(k);
  }

  /** A parse of `file` with content hash `hash`, if there is one (no need to decode the bytes). */
  parsedFile(file: string, hash: string): ParsedFile | undefined {
    return this.parsed.get(key(file, hash));
  }

  /** Whether a parse of this content is at hand, here or in the store (without reading it). */
  hasParse(file: string, hash: string): boolean {
    if (this.parsed.has(key(file, hash))) return true;
    try {
      return this.store?.has(file, hash) ?? false;
    } catch (err) {
      this.onStoreError(err, 'read');
      return false;
    }
  }

  /** `hash`: sha256 of the file's bytes, when the caller has it (the text's, computed otherwise). */
  parse(file: string, text: string, hash = sha256Hex(text)): ParsedFile {
    return this.lookup(file, text, hash) ?? this.adopt(parseYamlFile(file, text, hash));
  }

  /** The parse of this content, from memory or from the store, if there is one. */
  lookup(file: string, text: string, hash: string): ParsedFile | undefined {
    const k = key(file, hash);
    const hit = this.parsed.get(k);
    if (hit) return hit;
    const stored = this.stored(file, hash);
    if (!stored) return undefined;
    this.stats.fromStore++;
    const parsed = { file, hash, text, ...stored };
    this.parsed.set(k, parsed);
    return parsed;
  }

  /** A parse made elsewhere (src/source/parse-pool.ts): kept, and handed to the store. */
  adopt(parsed: ParsedFile): ParsedFile {
    const k = key(parsed.file, parsed.hash);
    const hit = this.parsed.get(k);
    if (hit) return hit;
    this.stats.parsed++;
    this.fresh.push(parsed);
    this.parsed.set(k, parsed);
    return parsed;
  }

  /** A stored parse; an unreadable row is a miss (the file is parsed again and the row replaced). */
  private stored(file: string, hash: string): StoredParse | undefined {
    try {
      return this.store?.get(file, hash);
    } catch (err) {
      this.onStoreError(err, 'read');
      return undefined;
    }
  }

  /** The parse of `file` in the last tree read (what a changed file's parse can keep documents of). */
  previousParse(file: string): ParsedFile | undefined {
    this.liveByFile ??= new Map(this.live.map((f) => [f.file, f]));
    return this.liveByFile.get(file);
  }

  /** Keeps only the parses the last read used; the new ones wait for `flush`. */
  retainOnly(files: readonly ParsedFile[]): void {
    this.liveByFile = undefined;
    const keep = new Set(files.map((f) => key(f.file, f.hash)));
    for (const k of this.parsed.keys()) if (!keep.has(k)) this.parsed.delete(k);
    this.fresh = this.fresh.filter((f) => keep.has(key(f.file, f.hash)));
    this.live = files;
  }

  /**
   * Hands the parses made since the last flush to the store, and lets it forget those the tree no
   * longer has. The pipeline calls it once a change is published: writing (and syncing) the store
   * is not on the path from a push to the proxies.
   */
  flush(): void {
    const fresh = this.fresh;
    this.fresh = [];
    if (!this.store || !fresh.length) return;
    try {
      this.store.save(fresh, this.live);
    } catch (err) {
      this.onStoreError(err, 'write');
    }
  }
}

function key(file: string, hash: string): string {
  return `${file}\u0000${hash}`;
}
