/**
 * Parsed files -> the model's documents, kept from one tree to the next so that a push costs the
 * files it changed. Per file (once per parse): each document's kind and schema are checked and
 * what passes becomes a definition. Across files: every definition of a `Kind/name` is indexed
 * (the first in path order is the model's, later ones are duplicates), and the model's lists are
 * patched where a definition changed instead of being rebuilt and sorted.
 *
 * One assembler belongs to one pipeline (like every cache there); a fresh one assembles from
 * scratch, which is what the equivalence tests compare an incremental result against.
 */
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { TSchema } from '@sinclair/typebox';
import { Codes, type Diagnostic, type PathSegment } from '../shared/diagnostics.ts';
import { editDistance } from '../shared/edit-distance.ts';
import { DiagnosticSink, type DocRef } from './diagnostic-sink.ts';
import { setModelFiles, type ModelFile } from './files.ts';
import { KINDS, type KindName } from './schema.ts';
import { findByName, patchByName, recordDelta } from '../shared/sorted-lists.ts';
import type { ParsedFile } from './sources.ts';
import {
  byName,
  emptyModel,
  LIST_OF,
  originKey,
  recordOrigin,
  type Doc,
  type DocKind,
  type Model,
  type ModelListName,
} from './types.ts';
import { appendAll } from '../shared/arrays.ts';
import { deepFreeze } from '../shared/freeze.ts';

/** One document that passed its own checks, and where it is. */
export interface Definition {
  readonly kind: DocKind;
  /** `Kind/name`. */
  readonly key: string;
  readonly doc: Doc;
  readonly ref: DocRef;
}

/** What one parsed file contributes; computed once per parse. */
interface Contribution {
  readonly definitions: readonly Definition[];
  /** The file's own problems: YAML, documents that are not mappings, unknown kinds, schema errors. */
  readonly diagnostics: readonly Diagnostic[];
  /** The file's definitions as the model holds them (hashed and stored per file). */
  readonly layout: ModelFile;
}

export interface Assembly {
  model: Model;
  /** The files' own problems and duplicate names. */
  diagnostics: Diagnostic[];
  /**
   * `Kind/name` of every document added, removed or replaced since the previous assembly;
   * undefined when everything is new (the first assembly, or one that rebuilt the lists).
   */
  changed?: ReadonlySet<string>;
  /** The model's definition of `Kind/name` (valid until the next assembly). */
  readonly lookup: (kind: string, name: string) => Definition | undefined;
}

/** Validators compiled from the static schemas: code, not data, so the same for every pipeline. */
const checkers = new Map<string, TypeCheck<TSchema>>();
function checkerFor(kind: KindName): TypeCheck<TSchema> {
  let c = checkers.get(kind);
  if (!c) {
    c = TypeCompiler.Compile(KINDS[kind]);
    checkers.set(kind, c);
  }
  return c;
}

/** Above this many changed definitions, the lists are rebuilt and sorted rather than patched. */
const PATCH_LIMIT = 512;

export class ModelAssembler {
  private readonly contributions = new WeakMap<ParsedFile, Contribution>();
  /** The files of the last assembly, by path. */
  private files = new Map<string, ParsedFile>();
  /** Every definition of each `Kind/name`, in path and document order: the first is the model's. */
  private readonly defs = new Map<string, Definition[]>();
  /** Keys defined more than once. */
  private readonly duplicates = new Set<string>();
  /** The lists of the last assembly (never changed once handed out: patched as copies). */
  private lists?: Record<ModelListName, Doc[]>;

  assemble(files: readonly ParsedFile[]): Assembly {
    const changed = new Set<string>();
    const next = new Map<string, ParsedFile>();
    for (const f of files) {
      next.set(f.file, f);
      const before = this.files.get(f.file);
      if (before === f) continue;
      if (before) this.remove(before, changed);
      this.add(f, changed);
    }
    for (const [path, f] of this.files) if (!next.has(path)) this.remove(f, changed);
    this.files = next;

    const patch = this.lists && changed.size <= PATCH_LIMIT;
    const lists = patch ? this.patched(this.lists!, changed) : this.rebuilt();
    this.lists = lists;
    const model = { ...emptyModel(), ...lists } as Model;
    const layout = files.map((f) => this.contributions.get(f)!.layout).filter((l) => l.docs.length);
    setModelFiles(model, layout);

    const diagnostics: Diagnostic[] = [];
    for (const f of files) appendAll(diagnostics, this.contributions.get(f)!.diagnostics);
    const textOf = (file: string) => this.files.get(file)?.text;
    for (const key of this.duplicates) appendAll(diagnostics, duplicateDiagnostics(this.defs.get(key)!, textOf));
    return {
      model,
      diagnostics,
      changed: patch ? changed : undefined,
      lookup: (kind, name) => this.defs.get(originKey(kind, name))?.[0],
    };
  }

  private contribution(f: ParsedFile): Contribution {
    let c = this.contributions.get(f);
    if (!c) this.contributions.set(f, (c = contribute(f)));
    return c;
  }

  private add(f: ParsedFile, changed: Set<string>): void {
    for (const d of this.contribution(f).definitions) {
      changed.add(d.key);
      const list = this.defs.get(d.key);
      if (!list) {
        this.defs.set(d.key, [d]);
        continue;
      }
      // Keep path and document order: the first definition wins, wherever files were added.
      let i = list.length;
      while (i > 0 && before(d, list[i - 1]!)) i--;
      list.splice(i, 0, d);
      this.duplicates.add(d.key);
    }
  }

  private remove(f: ParsedFile, changed: Set<string>): void {
    for (const d of this.contribution(f).definitions) {
      changed.add(d.key);
      const list = this.defs.get(d.key);
      if (!list) continue;
      const rest = list.filter((x) => x !== d);
      if (rest.length) this.defs.set(d.key, rest);
      else this.defs.delete(d.key);
      if (rest.length < 2) this.duplicates.delete(d.key);
    }
  }

  /**
   * Copies of the lists that changed, with each changed name replaced, inserted or removed; each
   * copy records its changed names (src/shared/sorted-lists.ts) for the stages after this one.
   */
  private patched(prev: Record<ModelListName, Doc[]>, changed: ReadonlySet<string>): Record<ModelListName, Doc[]> {
    const byKind = new Map<DocKind, Set<string>>();
    for (const key of changed) {
      const slash = key.indexOf('/');
      const kind = key.slice(0, slash) as DocKind;
      let names = byKind.get(kind);
      if (!names) byKind.set(kind, (names = new Set()));
      names.add(key.slice(slash + 1));
    }
    const out = { ...prev };
    for (const [kind, names] of byKind) {
      const list = LIST_OF[kind];
      const defined = (name: string) => this.defs.get(originKey(kind, name))?.[0]?.doc;
      // A document a changed file kept (src/source/parse-yaml.ts) is the same object: not a change.
      for (const name of names) if (defined(name) === findByName(prev[list], name)) names.delete(name);
      if (!names.size) continue;
      out[list] = patchByName(prev[list], names, defined);
      recordDelta(out[list], prev[list], names);
    }
    return out;
  }

  private rebuilt(): Record<ModelListName, Doc[]> {
    const { schemaVersion: _, ...lists } = emptyModel();
    const out = lists as Record<ModelListName, Doc[]>;
    for (const defs of this.defs.values()) out[LIST_OF[defs[0]!.kind]].push(defs[0]!.doc);
    for (const list of Object.values(out)) list.sort(byName);
    return out;
  }
}

function before(a: Definition, b: Definition): boolean {
  const fa = a.ref.origin.file;
  const fb = b.ref.origin.file;
  return fa < fb || (fa === fb && a.ref.origin.index < b.ref.origin.index);
}

function duplicateDiagnostics(defs: readonly Definition[], textOf: (file: string) => string | undefined): Diagnostic[] {
  const sink = new DiagnosticSink(textOf);
  const first = defs[0]!;
  for (const d of defs.slice(1))
    sink.error(
      Codes.DUPLICATE_NAME,
      d.ref,
      ['name'],
      `${d.kind} "${d.doc.name}" is already defined at ${first.ref.origin.file}:${first.ref.origin.line}`,
    );
  return sink.diagnostics;
}

/** One file's documents: each checked for kind and schema, once per parse. */
function contribute(file: ParsedFile): Contribution {
  const sink = new DiagnosticSink(() => file.text);
  const definitions: Definition[] = [];
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
    if (!checker.Check(value)) {
      reportSchemaErrors(sink, ref, checker.Errors(value));
      continue;
    }
    recordOrigin(value, origin);
    // Frozen from here on: see shared/freeze.ts and docs/architecture.md ("Same object, same content").
    deepFreeze(value);
    definitions.push({ kind: kind as DocKind, key: originKey(kind, name as string), doc: value as Doc, ref });
  }
  return {
    definitions,
    diagnostics: [...file.diagnostics, ...sink.diagnostics],
    layout: { file: file.file, docs: definitions.map((d) => ({ kind: d.kind, doc: d.doc })) },
  };
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
    // An object where a field takes an object or `false`: what is wrong inside the object, not the union.
    const branch = objectBranch(e);
    if (branch) {
      reportSchemaErrors(sink, ref, branch);
      continue;
    }
    const keyPattern = Object.keys((e.schema as { patternProperties?: object }).patternProperties ?? {})[0];
    if (e.type === ValueErrorType.ObjectAdditionalProperties && keyPattern) {
      // A map whose keys follow a pattern (runtime keys): the key is malformed, not unknown.
      const key = String(path[path.length - 1]);
      sink.error(Codes.SCHEMA, ref, path, `"${key}" is not a valid key (must match ${keyPattern})`, 'key');
    } else if (e.type === ValueErrorType.ObjectAdditionalProperties) {
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

/** A union's errors for its one object branch, when the value given is an object. */
function objectBranch(e: ValueError): Iterable<ValueError> | undefined {
  if (e.type !== ValueErrorType.Union || typeof e.value !== 'object' || e.value === null || Array.isArray(e.value))
    return undefined;
  const branches = (e.schema as { anyOf?: { type?: string }[] }).anyOf ?? [];
  const objects = branches.flatMap((b, i) => (b.type === 'object' ? [i] : []));
  return objects.length === 1 ? e.errors[objects[0]!] : undefined;
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
  if (e.type === ValueErrorType.Union && schema.anyOf?.some((s) => (s as { type?: string }).type === 'object')) {
    const others = schema.anyOf.flatMap((s) => (s.const === undefined ? [] : [JSON.stringify(s.const)]));
    return `must be an object${others.length ? ` or ${others.join(' or ')}` : ''}`;
  }
  const PRIMITIVE: Record<string, string> = { boolean: 'true or false', number: 'a number', string: 'text' };
  if (e.type === ValueErrorType.Union && schema.anyOf?.every((s) => PRIMITIVE[(s as { type?: string }).type ?? '']))
    return `must be ${schema.anyOf.map((s) => PRIMITIVE[(s as { type: string }).type]).join(', ')}`;
  if (e.type === ValueErrorType.StringPattern) {
    const hint = schema.description ? `: ${schema.description}` : ` (must match ${schema.pattern})`;
    return `${JSON.stringify(e.value)} is not valid${hint}`;
  }
  if (e.type === ValueErrorType.Literal)
    return `must be ${JSON.stringify((e.schema as unknown as { const: unknown }).const)}`;
  return e.message.charAt(0).toLowerCase() + e.message.slice(1);
}
