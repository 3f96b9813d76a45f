/**
 * Source set -> validated model. Three passes, all errors collected at once:
 *   1. per document: `kind`, then the kind's schema (unknown fields are errors);
 *   2. names: duplicates per kind;
 *   3. cross-document rules and references (checks.ts).
 * The produced Envoy resources are validated afterwards by the build (build.ts).
 */
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { TSchema } from '@sinclair/typebox';
import { Codes, sortDiagnostics, type Diagnostic } from '../shared/diagnostics.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import type { SourceSet } from './sources.ts';
import { checkModel, type CheckMemo } from './checks.ts';
import { editDistance } from '../shared/edit-distance.ts';
import { DiagnosticSink, type DocRef } from './diagnostic-sink.ts';
import { KINDS, type KindName } from './schema.ts';
import { byName, emptyModel, LIST_OF, originKey, type Model } from './types.ts';

/** Validators compiled from the static schemas: code, not data, so the same for every pipeline. */
const checkers = new Map<string, TypeCheck<TSchema>>();
function checkerFor(kind: KindName): TypeCheck<TSchema> {
  let c = checkers.get(kind);
  if (!c) {
    c = TypeCompiler.Compile(KINDS[kind] as TSchema);
    checkers.set(kind, c);
  }
  return c;
}

export interface ValidationResult {
  /** Present when there is no error (warnings allowed). */
  model?: Model;
  diagnostics: Diagnostic[];
}

/**
 * `schemaChecked`: documents already found schema-valid. Parsed documents of unchanged files are
 * the same objects as last time (source cache), so a pipeline passes its set and each document is
 * checked once; a fresh set checks everything.
 */
export function validateSourceSet(
  source: SourceSet,
  schemaChecked = new WeakSet<object>(),
  checks?: CheckMemo,
): ValidationResult {
  const texts = new Map(source.files.map((f) => [f.file, f.text]));
  const sink = new DiagnosticSink((file) => texts.get(file));
  sink.push(...source.diagnostics);
  for (const f of source.files) sink.push(...f.diagnostics);

  const model = emptyModel();
  const refs = new Map<string, DocRef>();
  for (const file of source.files) {
    for (const doc of file.documents) {
      const origin = { file: doc.file, index: doc.index, line: doc.line };
      const value = doc.value;
      const anon: DocRef = { origin, kind: 'document', name: `#${doc.index + 1}` };
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        sink.error(Codes.DOC_NOT_A_MAP, anon, [], 'a document must be a mapping with `kind` and `name`');
        continue;
      }
      const kind = (value as Record<string, unknown>).kind;
      const name = (value as Record<string, unknown>).name;
      const ref: DocRef = {
        origin,
        kind: typeof kind === 'string' ? kind : 'document',
        name: typeof name === 'string' ? name : `#${doc.index + 1}`,
      };
      if (typeof kind !== 'string' || !(kind in KINDS)) {
        const msg =
          typeof kind === 'string'
            ? `unknown kind "${kind}" (expected one of ${Object.keys(KINDS).join(', ')})`
            : `missing \`kind\` (one of ${Object.keys(KINDS).join(', ')})`;
        sink.error(Codes.UNKNOWN_KIND, ref, typeof kind === 'string' ? ['kind'] : [], msg);
        continue;
      }
      const checker = checkerFor(kind as KindName);
      // Parsed documents of unchanged files are the same objects as last time: checked once.
      if (!schemaChecked.has(value) && !checker.Check(value)) {
        reportSchemaErrors(sink, ref, checker.Errors(value));
        continue;
      }
      schemaChecked.add(value);
      const key = originKey(kind, name as string);
      const first = refs.get(key);
      if (first) {
        sink.error(
          Codes.DUPLICATE_NAME,
          ref,
          ['name'],
          `${kind} "${name}" is already defined at ${first.origin.file}:${first.origin.line}`,
        );
        continue;
      }
      refs.set(key, ref);
      model.origins[key] = origin;
      (model[LIST_OF[kind as KindName]] as unknown[]).push(value);
    }
  }
  for (const list of Object.values(LIST_OF)) (model[list] as { name: string }[]).sort(byName);

  checkModel(model, sink, (kind, name) => refs.get(originKey(kind, name)), checks);
  const diagnostics = sortDiagnostics(sink.diagnostics);
  return diagnostics.some((d) => d.severity === 'error') ? { diagnostics } : { model, diagnostics };
}

function pointerToPath(pointer: string): PathSegment[] {
  if (!pointer) return [];
  return pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^[0-9]+$/.test(s) ? Number(s) : s));
}

function reportSchemaErrors(sink: DiagnosticSink, ref: DocRef, errors: Iterable<ValueError>): void {
  const seen = new Set<string>();
  for (const e of errors) {
    const path = pointerToPath(e.path);
    const key = e.path;
    // A union reports one error per branch; one message per location is enough.
    if (seen.has(key)) continue;
    if ([...seen].some((s) => key.startsWith(`${s}/`)) && e.type === ValueErrorType.Union) continue;
    seen.add(key);
    if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      const field = path[path.length - 1];
      sink.error(
        Codes.UNKNOWN_FIELD,
        ref,
        path,
        `unknown field "${String(field)}"${suggestField(e, String(field))}`,
        'key',
      );
    } else if (e.type === ValueErrorType.ObjectRequiredProperty) {
      sink.error(Codes.SCHEMA, ref, path, `missing required field "${String(path[path.length - 1])}"`);
    } else {
      sink.error(Codes.SCHEMA, ref, path, friendlyMessage(e));
    }
  }
}

function suggestField(e: ValueError, field: string): string {
  // The error's schema is the object; offer its known properties.
  const props = Object.keys((e.schema as { properties?: object }).properties ?? {});
  if (!props.length) return '';
  const close = props.find((p) => p.toLowerCase() === field.toLowerCase() || editDistance(p, field) <= 2);
  return close ? ` (did you mean "${close}"?)` : ` (allowed: ${props.join(', ')})`;
}

function friendlyMessage(e: ValueError): string {
  const schema = e.schema as { anyOf?: { const?: unknown }[]; pattern?: string; description?: string };
  if (e.type === ValueErrorType.Union && schema.anyOf?.every((s) => s.const !== undefined)) {
    return (
      `${JSON.stringify(e.value)} is not allowed; use one of ` +
      `${schema.anyOf.map((s) => JSON.stringify(s.const)).join(', ')}`
    );
  }
  if (e.type === ValueErrorType.StringPattern) {
    const hint = schema.description ? `: ${schema.description}` : ` (must match ${schema.pattern})`;
    return `${JSON.stringify(e.value)} is not valid${hint}`;
  }
  if (e.type === ValueErrorType.Literal)
    return `must be ${JSON.stringify((e.schema as unknown as { const: unknown }).const)}`;
  return e.message.charAt(0).toLowerCase() + e.message.slice(1);
}
