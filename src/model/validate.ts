/**
 * Source set -> validated model. Three passes, all errors collected at once:
 *   1. per document: `kind`, then the kind's schema (unknown fields are errors);
 *   2. names: duplicates per kind;
 *   3. cross-document rules and references (checks.ts).
 * Passes 1 and 2 are the assembler's (assemble.ts), which keeps them from one tree to the next.
 * The produced Envoy resources are validated afterwards by the build (build.ts).
 */
import { sortDiagnostics, type Diagnostic } from '../shared/diagnostics.ts';
import { ModelAssembler } from './assemble.ts';
import { checkModel, type CheckMemo } from './checks.ts';
import { DiagnosticSink } from './diagnostic-sink.ts';
import type { SourceSet } from './sources.ts';
import type { Model } from './types.ts';

export interface ValidationResult {
  /** Present when there is no error (warnings allowed). */
  model?: Model;
  diagnostics: Diagnostic[];
}

/**
 * `assembler` and `checks` are what a pipeline keeps between trees: parsed documents of unchanged
 * files are the same objects as last time, so each is checked once. Fresh ones check everything.
 */
export function validateSourceSet(
  source: SourceSet,
  assembler = new ModelAssembler(),
  checks?: CheckMemo,
): ValidationResult {
  const texts = new Map(source.files.map((f) => [f.file, f.text]));
  const sink = new DiagnosticSink((file) => texts.get(file));
  sink.push(source.diagnostics);
  const assembly = assembler.assemble(source.files);
  sink.push(assembly.diagnostics);
  const { model } = assembly;
  checkModel(model, sink, assembly.lookup, checks);
  const diagnostics = sortDiagnostics(sink.diagnostics);
  return diagnostics.some((d) => d.severity === 'error') ? { diagnostics } : { model, diagnostics };
}
