/**
 * A type's resources in content-defined chunks, for the store: a stored type names its chunks, and
 * a chunk (the keys of a run of resources in name order) is stored once, by content. A chunk ends
 * after a name whose hash says so (one name in 64 on average), so where chunks end depends on the
 * names alone: a change to a few resources of 10,000 makes a few new chunks, and the version stored
 * for it writes those and a list of about 160 chunk hashes, not the 10,000 keys again. The same
 * resources always give the same chunks, however they were reached (by a patch or from nothing).
 */
import { shortHash } from '../shared/hash.ts';
import { lowerBound } from '../shared/sorted-lists.ts';
import type { EncodedResource } from './encoder.ts';
import { appendAll } from '../shared/arrays.ts';

export interface KeyChunk {
  /** A run of the type's resources, in name order. */
  readonly resources: readonly EncodedResource[];
  /** Hash of their keys, in order: how the store names the chunk. */
  readonly hash: string;
}

/** One name in this many ends a chunk. */
const AVERAGE = 64;

/** FNV-1a over the name's UTF-16 code units: cheap, and the same in every process. */
function endsChunk(name: string): boolean {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return (h >>> 0) % AVERAGE === 0;
}

function chunk(resources: readonly EncodedResource[]): KeyChunk {
  return { resources, hash: shortHash(resources.map((r) => r.key).join('\n')) };
}

/** `sorted[from, to)` cut after every name that ends a chunk (and at `to`). */
function split(sorted: readonly EncodedResource[], from: number, to: number): KeyChunk[] {
  const out: KeyChunk[] = [];
  let start = from;
  for (let i = from; i < to; i++)
    if (endsChunk(sorted[i]!.name)) {
      out.push(chunk(sorted.slice(start, i + 1)));
      start = i + 1;
    }
  if (start < to) out.push(chunk(sorted.slice(start, to)));
  return out;
}

/** Every chunk of resources in name order. */
export function chunksOf(sorted: readonly EncodedResource[]): KeyChunk[] {
  return split(sorted, 0, sorted.length);
}

/** Index of the chunk whose run covers `name` (the last one starting at or before it). */
function chunkOf(chunks: readonly KeyChunk[], name: string): number {
  let lo = 0;
  let hi = chunks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (chunks[mid]!.resources[0]!.name <= name) lo = mid + 1;
    else hi = mid;
  }
  return Math.max(0, lo - 1);
}

/**
 * The chunks of `sorted` (the resources after a change of `names`), from `before` (the chunks of
 * the resources before it): the chunks covering a changed name are cut again from `sorted`, and
 * while the last of them does not end at a name that ends a chunk (its end was removed), the next
 * chunk joins them. Every other chunk is the same object as before.
 */
export function patchChunks(
  before: readonly KeyChunk[],
  sorted: readonly EncodedResource[],
  names: Iterable<string>,
): KeyChunk[] {
  if (!before.length) return chunksOf(sorted);
  const touched = [...new Set([...names].map((n) => chunkOf(before, n)))].sort((a, b) => a - b);
  const out: KeyChunk[] = [];
  let next = 0;
  for (let t = 0; t < touched.length; t++) {
    const first = touched[t]!;
    if (first < next) continue; // already joined to the run before
    appendAll(out, before.slice(next, first));
    const from = first === 0 ? 0 : lowerBound(sorted, before[first]!.resources[0]!.name);
    let last = first;
    for (;;) {
      // Runs of touched chunks that follow one another are cut together.
      while (t + 1 < touched.length && touched[t + 1] === last + 1) last = touched[++t]!;
      const to = last + 1 < before.length ? lowerBound(sorted, before[last + 1]!.resources[0]!.name) : sorted.length;
      const cut = split(sorted, from, to);
      const tail = cut[cut.length - 1];
      const open = tail !== undefined && !endsChunk(tail.resources[tail.resources.length - 1]!.name);
      if (open && last + 1 < before.length) {
        last++;
        continue;
      }
      appendAll(out, cut);
      break;
    }
    next = last + 1;
  }
  appendAll(out, before.slice(next));
  return out;
}
