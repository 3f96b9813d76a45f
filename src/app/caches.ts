/**
 * Everything the pipeline keeps from one apply to the next so that a change costs what it
 * changes: file hashes and parses (source), documents already schema-checked (validation),
 * translations and encodings (build), per-document hashes (model hash). One object per pipeline,
 * never module state: two pipelines in one process share nothing, and a fresh object gives a
 * build that reuses nothing (what the determinism tests compare against).
 */
import { newCheckMemo } from '../model/checks.ts';
import { LIST_OF, originKey, type Model } from '../model/types.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { sha256Hex } from '../shared/hash.ts';
import type { BuildCaches } from '../snapshot/build.ts';
import { ResourceEncoder } from '../snapshot/encoder.ts';
import { SourceCache, type ParsedFileStore } from '../source/source-cache.ts';
import { TranslationMemo } from '../translate/memo.ts';

export class PipelineCaches implements BuildCaches {
  readonly source: SourceCache;
  readonly schemaChecked = new WeakSet<object>();
  readonly checks = newCheckMemo();
  readonly memo = new TranslationMemo();
  readonly encoder = new ResourceEncoder();
  private readonly docHashes = new WeakMap<object, string>();

  /** `parses`: where parsed files outlive the process (the server's database), if anywhere. */
  constructor(parses?: ParsedFileStore, onParseStoreError?: (err: unknown, what: 'read' | 'write') => void) {
    this.source = new SourceCache(parses, onParseStoreError);
  }

  /**
   * Hash of a model: over per-document hashes (memoized by document identity: unchanged files
   * cost nothing) and where each document is (kind, file, index, line). The lists are in name
   * order, so no key sorting is needed; origins of documents the model does not hold do not exist.
   */
  modelHash(model: Model): string {
    const h = (doc: object) => {
      let v = this.docHashes.get(doc);
      if (!v) this.docHashes.set(doc, (v = sha256Hex(canonicalJson(doc))));
      return v;
    };
    const parts: string[] = [String(model.schemaVersion)];
    for (const [kind, list] of Object.entries(LIST_OF))
      for (const d of (model[list] ?? []) as { name: string }[]) {
        const o = model.origins[originKey(kind, d.name)];
        parts.push(`${h(d)} ${kind} ${o ? `${o.file}#${o.index}:${o.line}` : '-'}`);
      }
    return sha256Hex(parts.join('\n'));
  }
}
