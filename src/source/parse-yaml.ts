import {
  LineCounter,
  parseAllDocuments,
  isMap,
  isSeq,
  isPair,
  isScalar,
  type Document,
  type Node as YamlNode,
} from 'yaml';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import type { ParsedFile, SourceDocument } from './types.ts';

/**
 * Anchors are allowed but bounded: aliases stay cheap until walked, so a "billion laughs" file
 * would explode later in validation. 100 is yaml's own default; we state it explicitly.
 */
const MAX_ALIAS_COUNT = 100;
/**
 * Aliases can also amplify without many of them (99 aliases of one large route became an 11 MB
 * route configuration): a document whose aliases expand it beyond this many bytes of JSON, and
 * beyond 8 times its own text, is refused.
 */
const MAX_EXPANDED_BYTES = 256 * 1024;
const MAX_EXPANSION_FACTOR = 8;
/** Documents per file: far beyond any real file; checked before parsing (a 4 MB file of 690,000 documents blocked the loop for 24 s). */
export const MAX_DOCUMENTS_PER_FILE = 5000;
const PARSE_OPTIONS = { prettyErrors: false, uniqueKeys: true, strict: true, logLevel: 'silent' as const };

/**
 * Parses are cached by content hash: a one-file change re-parses one file, not the tree
 * (`yaml` needs about 2.4 s for 10k services, so this matters). Entries not used by the last
 * read are dropped by `retainOnly`.
 */
const cache = new Map<string, ParsedFile>();

function cacheKey(file: string, hash: string): string {
  return `${file}\u0000${hash}`;
}

export function retainOnly(files: readonly ParsedFile[]): void {
  const keep = new Set(files.map((f) => cacheKey(f.file, f.hash)));
  for (const k of cache.keys()) if (!keep.has(k)) cache.delete(k);
}

/** A cached parse of `file` with content hash `hash`, if there is one (no need to decode the bytes). */
export function cachedParse(file: string, hash: string): ParsedFile | undefined {
  return cache.get(cacheKey(file, hash));
}

export function parseYamlFile(file: string, text: string): ParsedFile {
  const hash = sha256Hex(text);
  const key = cacheKey(file, hash);
  const hit = cache.get(key);
  if (hit) return hit;
  const parsed = parseUncached(file, text, hash);
  cache.set(key, parsed);
  return parsed;
}

function parseUncached(file: string, text: string, hash: string): ParsedFile {
  const lineCounter = new LineCounter();
  const diagnostics: Diagnostic[] = [];
  const documents: SourceDocument[] = [];
  let docs: Document.Parsed[];
  const separators = text.match(/^---/gm)?.length ?? 0;
  if (separators + 1 > MAX_DOCUMENTS_PER_FILE) {
    diagnostics.push({
      code: Codes.YAML_LIMIT,
      severity: 'error',
      message: `about ${separators + 1} documents in one file; the limit is ${MAX_DOCUMENTS_PER_FILE} (split the file)`,
      location: { file, line: 1, column: 1 },
    });
    return { file, hash, text, documents, diagnostics };
  }
  try {
    docs = parseAllDocuments(text, { ...PARSE_OPTIONS, lineCounter }) as Document.Parsed[];
  } catch (err) {
    // e.g. "Maximum call stack size exceeded" on absurd nesting: still a located, per-file error
    diagnostics.push({
      code: Codes.YAML_SYNTAX,
      severity: 'error',
      message: `cannot parse: ${(err as Error).message}`,
      location: { file, line: 1, column: 1 },
    });
    return { file, hash, text, documents, diagnostics };
  }
  if (!Array.isArray(docs)) docs = [docs as unknown as Document.Parsed];
  docs.forEach((doc, index) => {
    for (const e of [...doc.errors, ...doc.warnings]) {
      const pos = lineCounter.linePos(e.pos[0]);
      diagnostics.push({
        code: Codes.YAML_SYNTAX,
        severity: 'error',
        message: e.message.split('\n')[0] ?? e.message,
        location: { file, line: pos.line, column: pos.col },
      });
    }
    if (doc.errors.length) return;
    if (doc.contents === null) return; // empty document (e.g. a trailing `---`)
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (err) {
      const pos = lineCounter.linePos(doc.range[0]);
      diagnostics.push({
        code: Codes.YAML_LIMIT,
        severity: 'error',
        message: (err as Error).message,
        location: { file, line: pos.line, column: pos.col },
      });
      return;
    }
    const start = lineCounter.linePos(doc.contents.range?.[0] ?? doc.range[0]);
    if (text.includes('*')) {
      // Only documents that may use aliases can expand beyond their text.
      const own = doc.range[2] - doc.range[0];
      const expanded = JSON.stringify(value)?.length ?? 0;
      if (expanded > MAX_EXPANDED_BYTES && expanded > MAX_EXPANSION_FACTOR * own) {
        diagnostics.push({
          code: Codes.YAML_LIMIT,
          severity: 'error',
          message: `aliases expand this document to ${expanded} bytes (from ${own} bytes of YAML); the limit is ${MAX_EXPANDED_BYTES} bytes or ${MAX_EXPANSION_FACTOR} times the text`,
          location: { file, line: start.line, column: start.col },
        });
        return;
      }
    }
    documents.push({ file, index, line: start.line, value });
  });
  return { file, hash, text, documents, diagnostics };
}

export type PathSegment = string | number;

/** A few recent ASTs, so locating many diagnostics in one file parses it once. */
const locateCache = new Map<string, { docs: Document.Parsed[]; lineCounter: LineCounter }>();

function parsedForLocate(text: string): { docs: Document.Parsed[]; lineCounter: LineCounter } {
  let hit = locateCache.get(text);
  if (!hit) {
    const lineCounter = new LineCounter();
    let docs: Document.Parsed[] = [];
    try {
      const parsed = parseAllDocuments(text, { ...PARSE_OPTIONS, lineCounter });
      docs = (Array.isArray(parsed) ? parsed : [parsed]) as Document.Parsed[];
    } catch {
      docs = [];
    }
    hit = { docs, lineCounter };
    if (locateCache.size >= 4) locateCache.delete(locateCache.keys().next().value as string);
    locateCache.set(text, hit);
  }
  return hit;
}

/**
 * Line/column of a field inside document `index` of `text`. `at: 'key'` points at the key of the
 * last segment (for "unknown field"), otherwise at its value. Falls back to the nearest existing
 * ancestor, so a missing field points at the object that should contain it.
 */
export function locate(
  text: string,
  index: number,
  path: readonly PathSegment[],
  at: 'key' | 'value' = 'value',
): { line: number; column: number } {
  const { docs, lineCounter } = parsedForLocate(text);
  const doc = docs[index];
  if (!doc) return { line: 1, column: 1 };
  let node: YamlNode | null | undefined = doc.contents as YamlNode | null;
  let offset = node?.range?.[0] ?? doc.range[0];
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) break;
      const keyNode = pair.key as YamlNode;
      if (last && at === 'key') {
        offset = keyNode.range?.[0] ?? offset;
        break;
      }
      node = pair.value as YamlNode | null;
      offset = node?.range?.[0] ?? keyNode.range?.[0] ?? offset;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg] as YamlNode | undefined;
      if (!item) break;
      node = item;
      offset = item.range?.[0] ?? offset;
    } else {
      break;
    }
  }
  const pos = lineCounter.linePos(offset);
  return { line: pos.line, column: pos.col };
}
