import type { Document } from 'yaml';
import { LineCounter, parseAllDocuments } from '../shared/yaml.ts';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import type { ParsedFile, SourceDocument } from '../model/sources.ts';
import { YAML_PARSE_OPTIONS } from '../model/yaml-locate.ts';
import { loadPlainYaml } from './fast-yaml.ts';

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
/** Documents per file: far beyond any real file; checked before parsing. */
export const MAX_DOCUMENTS_PER_FILE = 5000;
/** Documents in a whole tree (each costs validation and memory however small it is). */
export const MAX_DOCUMENTS_PER_TREE = 100_000;

/**
 * Parses one file (uncached: the pipeline's SourceCache keeps parses by content hash). With
 * `previous`, the parse of the same file before it changed, only the documents whose text changed
 * are parsed: the others keep their values (the same objects, so every later stage sees them
 * unchanged), at their new index and line.
 */
export function parseYamlFile(file: string, text: string, hash = sha256Hex(text), previous?: ParsedFile): ParsedFile {
  return (
    overDocumentLimit(file, text, hash) ??
    (previous && reparse(file, text, hash, previous)) ??
    parseUncached(file, text, hash)
  );
}

/**
 * At most how many documents a text holds: one more than its lines that start a document (`---`)
 * or end one (`...`, after which a bare document may follow).
 */
export function documentBound(text: string): number {
  let n = 1;
  for (let at = 0; at < text.length;) {
    const c = text.charCodeAt(at);
    if ((c === 45 /* - */ && text.startsWith('---', at)) || (c === 46 /* . */ && text.startsWith('...', at))) n++;
    const eol = text.indexOf('\n', at);
    if (eol < 0) break;
    at = eol + 1;
  }
  return n;
}

/** The file refused, before any parse, when it may have more documents than MAX_DOCUMENTS_PER_FILE. */
function overDocumentLimit(file: string, text: string, hash: string): ParsedFile | undefined {
  const bound = documentBound(text);
  if (bound <= MAX_DOCUMENTS_PER_FILE) return undefined;
  const diagnostic: Diagnostic = {
    code: Codes.YAML_LIMIT,
    severity: 'error',
    message:
      `up to ${bound} documents in one file (counting --- and ... lines); the limit is ` +
      `${MAX_DOCUMENTS_PER_FILE} (split the file)`,
    location: { file, line: 1, column: 1 },
  };
  return { file, hash, text, documents: [], diagnostics: [diagnostic] };
}

/** One piece of a file cut by `pieces`. */
interface Piece {
  text: string;
  /** 1-based line of the piece's first line. */
  line: number;
  /** The text after a bare marker line (`---` alone) and its first line: a document moved first keeps its value. */
  body: string;
  bodyLine: number;
  /** Index of its document in the file; -1: no document (comments only, before the first marker). */
  index: number;
}

const MARKER = /^---(?=[ \t\r\n]|$)/gm;

/**
 * A file cut where its documents begin: at every line that starts with `---` (a document marker
 * wherever it is: YAML forbids such a line inside any scalar or collection). Each piece after the
 * first is one document; the first is one unless it holds only comments and blank lines. Files
 * with directives (`%`) or document end markers (`...`), where pieces and documents need not match,
 * are not cut.
 */
function pieces(text: string): Piece[] | undefined {
  if (/^(%|\.\.\.)/m.test(text) || text.charCodeAt(0) === 0xfeff) return undefined;
  const starts = [0];
  for (const m of text.matchAll(MARKER)) if (m.index > 0) starts.push(m.index);
  const out: Piece[] = [];
  let line = 1;
  let index = 0;
  starts.forEach((start, i) => {
    const piece = text.slice(start, starts[i + 1] ?? text.length);
    const bare = i === 0 && !piece.startsWith('---') && piece.split('\n').every((l) => /^\s*(#.*)?$/.test(l));
    const marker = /^---[ \t]*\r?\n/.exec(piece)?.[0];
    const body = marker ? piece.slice(marker.length) : piece;
    out.push({ text: piece, line, index: bare ? -1 : index, body, bodyLine: marker ? line + 1 : line });
    if (!bare) index++;
    for (let k = piece.indexOf('\n'); k !== -1; k = piece.indexOf('\n', k + 1)) line++;
  });
  return out;
}

/**
 * The file parsed piece by piece, the documents of pieces whose text `previous` had taken from
 * it. Undefined (parse the whole file) when the file cannot be cut, when `previous` had problems,
 * or when a changed piece has any: then the whole file's parse reports them as it always does.
 */
function reparse(file: string, text: string, hash: string, previous: ParsedFile): ParsedFile | undefined {
  if (previous.diagnostics.length) return undefined;
  const now = pieces(text);
  const before = pieces(previous.text);
  if (!now || !before) return undefined;
  // Each earlier document, by the text of its piece (an empty document has no value to keep).
  const kept = new Map<string, { doc: SourceDocument; line: number }>();
  const docs = previous.documents;
  let d = 0;
  for (const [i, p] of before.entries()) {
    const end = before[i + 1]?.line ?? Infinity;
    if (d < docs.length && docs[d]!.line >= p.line && docs[d]!.line < end) {
      // Cut and parsed must agree on every document of the earlier text, or nothing is kept.
      if (docs[d]!.index !== p.index) return undefined;
      kept.set(p.body, { doc: docs[d]!, line: p.bodyLine });
      d++;
    }
  }
  if (d !== docs.length) return undefined;
  const documents: SourceDocument[] = [];
  for (const p of now) {
    if (p.index < 0) continue;
    const old = kept.get(p.body);
    if (old) {
      // A value belongs to one document: a second piece with the same text is parsed.
      kept.delete(p.body);
      documents.push({ file, index: p.index, line: p.bodyLine + old.doc.line - old.line, value: old.doc.value });
      continue;
    }
    const parsed = parseUncached(file, p.text, hash);
    if (parsed.diagnostics.length || parsed.documents.length > 1) return undefined;
    for (const doc of parsed.documents) documents.push({ ...doc, index: p.index, line: doc.line + p.line - 1 });
  }
  return { file, hash, text, documents, diagnostics: [] };
}

/** A file parsed: by the fast path where it can vouch for yaml's answer (src/source/fast-yaml.ts), else by yaml. */
function parseUncached(file: string, text: string, hash: string): ParsedFile {
  const plain = loadPlainYaml(text);
  if (!plain) return parseWithYaml(file, text, hash);
  const documents = plain.map((d): SourceDocument => ({ file, index: d.index, line: d.line, value: d.value }));
  return { file, hash, text, documents, diagnostics: [] };
}

/** A file parsed by yaml, the parser of record: every problem and its place is reported from here. */
export function parseWithYaml(file: string, text: string, hash: string): ParsedFile {
  const lineCounter = new LineCounter();
  const diagnostics: Diagnostic[] = [];
  const documents: SourceDocument[] = [];
  let docs: Document.Parsed[];
  try {
    docs = parseAllDocuments(text, { ...YAML_PARSE_OPTIONS, lineCounter }) as Document.Parsed[];
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
  if (!Array.isArray(docs)) docs = [docs];
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
          message:
            `aliases expand this document to ${expanded} bytes (from ${own} bytes of YAML); the limit is ` +
            `${MAX_EXPANDED_BYTES} bytes or ${MAX_EXPANSION_FACTOR} times the text`,
          location: { file, line: start.line, column: start.col },
        });
        return;
      }
    }
    documents.push({ file, index, line: start.line, value });
  });
  return { file, hash, text, documents, diagnostics };
}
