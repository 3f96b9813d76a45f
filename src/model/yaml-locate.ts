/** Line and column of a field in a YAML document, found again from the file's text when needed. */
import type { Document, Node as YamlNode } from 'yaml';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments } from '../shared/yaml.ts';
import type { PathSegment } from '../shared/diagnostics.ts';

/** How fleetxds parses YAML everywhere (source stage and locations agree on every offset). */
export const YAML_PARSE_OPTIONS = { prettyErrors: false, uniqueKeys: true, strict: true, logLevel: 'silent' as const };

/**
 * Finds where a field is in a YAML file, for diagnostics. Keeps the ASTs of a few recent files,
 * so locating many diagnostics in one file parses it once; one locator serves one validation run.
 */
export class YamlLocator {
  private readonly recent = new Map<string, { docs: Document.Parsed[]; lineCounter: LineCounter }>();

  private parsed(text: string): { docs: Document.Parsed[]; lineCounter: LineCounter } {
    let hit = this.recent.get(text);
    if (!hit) {
      const lineCounter = new LineCounter();
      let docs: Document.Parsed[];
      try {
        const parsed = parseAllDocuments(text, { ...YAML_PARSE_OPTIONS, lineCounter });
        docs = (Array.isArray(parsed) ? parsed : [parsed]) as Document.Parsed[];
      } catch {
        docs = [];
      }
      hit = { docs, lineCounter };
      if (this.recent.size >= 4) this.recent.delete(this.recent.keys().next().value as string);
      this.recent.set(text, hit);
    }
    return hit;
  }

  /**
   * Line/column of a field inside document `index` of `text`. `at: 'key'` points at the key of the
   * last segment (for "unknown field"), otherwise at its value. Falls back to the nearest existing
   * ancestor, so a missing field points at the object that should contain it.
   */
  locate(
    text: string,
    index: number,
    path: readonly PathSegment[],
    at: 'key' | 'value' = 'value',
  ): { line: number; column: number } {
    const { docs, lineCounter } = this.parsed(text);
    const doc = docs[index];
    if (!doc) return { line: 1, column: 1 };
    let node: YamlNode | null | undefined = doc.contents;
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
}
