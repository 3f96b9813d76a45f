/**
 * Everything the pipeline keeps from one apply to the next so that a change costs what it
 * changes: file hashes and parses (source), the assembled documents and what their checks found
 * (validation), translations and encodings (build). One object per pipeline,
 * never module state: two pipelines in one process share nothing, and a fresh object gives a
 * build that reuses nothing (what the determinism tests compare against).
 */
import { newCheckMemo } from '../model/checks.ts';
import { ModelAssembler } from '../model/assemble.ts';
import type { BuildCaches } from '../snapshot/build.ts';
import { ResourceEncoder } from '../snapshot/encoder.ts';
import { SourceCache, type ParsedFileStore } from '../source/source-cache.ts';
import { TranslationMemo } from '../translate/memo.ts';

export class PipelineCaches implements BuildCaches {
  readonly source: SourceCache;
  readonly assembler = new ModelAssembler();
  readonly checks = newCheckMemo();
  readonly memo = new TranslationMemo();
  readonly encoder = new ResourceEncoder();

  /** `parses`: where parsed files outlive the process (the server's database), if anywhere. */
  constructor(parses?: ParsedFileStore, onParseStoreError?: (err: unknown, what: 'read' | 'write') => void) {
    this.source = new SourceCache(parses, onParseStoreError);
  }
}
