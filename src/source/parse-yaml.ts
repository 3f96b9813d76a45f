import type { Document } from 'yaml';
import { LineCounter, parseAllDocuments } from '../shared/yaml.ts';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import type { ParsedFile, SourceDocument } from '../model/sources.ts';
import { YAML_PARSE_OPTIONS } from '../model/yaml-locate.ts';

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
/**
 * Documents per file: far beyond any real file; checked before parsing (a 4 MB file of 690,000
 * documents blocked the loop for 24 s).
 */
export const MAX_DOCUMENTS_PER_FILE = 5000;

/** Parses one file (uncached: the pipeline's SourceCache keeps parses by content hash). */
export function parseYamlFile(file: string, text: string, hash = sha256Hex(text)): ParsedFile {
  return parseUncached(file, text, hash);
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
