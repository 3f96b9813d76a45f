/**
 * What makes a check of a changed tree cost what changed: a document that is the same object as
 * in the last check is not checked again; its diagnostics are replayed. A check that reads other
 * documents (the services a route cites) is replayed only while those are the same objects too.
 */
import type { Diagnostic } from '../shared/diagnostics.ts';
import type { DiagnosticSink, NeedService } from './diagnostic-sink.ts';
import type { ServiceDoc } from './schema.ts';
import { sameItems } from '../shared/same-items.ts';
import { changedNames, findByName } from '../shared/sorted-lists.ts';
import { appendAll } from '../shared/arrays.ts';

/**
 * Results of checks by document identity: parsed documents of unchanged files are the same
 * objects as last time, so a one-file change checks that file's documents again and replays the
 * others' diagnostics. A check that reads other documents (a virtual host's routes name services)
 * is replayed only while each document it read is still the same object, or still missing.
 */
export interface CheckMemo {
  readonly service: WeakMap<object, Diagnostic[]>;
  readonly citing: WeakMap<object, CitingResult>;
  /** Checks run per document of a model list, patched like the list (perDocument()). */
  readonly lists: Map<string, PerDocumentState>;
}

interface CitingResult {
  diagnostics: Diagnostic[];
  /** The model's services when it ran: while they are the same array, nothing it looked up changed. */
  services: readonly ServiceDoc[];
  /** The services the check looked up, and what it found. */
  cited: [string, ServiceDoc | undefined][];
}

export function newCheckMemo(): CheckMemo {
  return { service: new WeakMap(), citing: new WeakMap(), lists: new Map() };
}

const NOTHING_READ: ReadonlySet<string> = new Set();

/** What a per-document check of one model list reported, and what it read, as of its last run. */
interface PerDocumentState {
  inputs: readonly unknown[];
  list: readonly { name: string }[];
  reads?: readonly { name: string }[];
  /** By document name, only documents that reported something. */
  reported: Map<string, Diagnostic[]>;
  /** By name in `reads`: the documents whose check read it. */
  readers: Map<string, Set<string>>;
  /** By document name: the names its check read. */
  readBy: Map<string, readonly string[]>;
}

/**
 * A check run for each document of `list`, patched like the list: while `inputs` are the same
 * objects, a list patched from the last one (src/shared/sorted-lists.ts) has only its changed
 * documents checked again, and those whose check read a changed name of `reads` (a virtual host
 * whose routes name a changed service); the others' diagnostics are replayed. The state is
 * updated in place and dropped when the result has errors (their "did you mean" hints depend on
 * every name; a tree with errors is not applied anyway).
 */
export function perDocument<T extends { name: string }>(
  memo: CheckMemo | undefined,
  key: string,
  sink: DiagnosticSink,
  list: readonly T[],
  reads: readonly { name: string }[] | undefined,
  inputs: readonly unknown[],
  check: (doc: T) => Iterable<string> | void,
): void {
  const hit = memo?.lists.get(key);
  const same = hit && sameItems(hit.inputs, inputs);
  const docs = same ? changedNames(hit.list, list) : undefined;
  const read = reads ? (same ? changedNames(hit.reads, reads) : undefined) : NOTHING_READ;
  const state: PerDocumentState =
    hit && docs && read ? hit : { inputs, list, reads, reported: new Map(), readers: new Map(), readBy: new Map() };
  const run = (name: string, doc: T | undefined) => {
    state.reported.delete(name);
    for (const r of state.readBy.get(name) ?? []) state.readers.get(r)?.delete(name);
    state.readBy.delete(name);
    if (!doc) return;
    const before = sink.diagnostics.length;
    const names = check(doc);
    const reported = sink.diagnostics.splice(before);
    if (reported.length) state.reported.set(name, reported);
    if (!names) return;
    const readNames = [...names];
    state.readBy.set(name, readNames);
    for (const r of readNames) {
      let set = state.readers.get(r);
      if (!set) state.readers.set(r, (set = new Set()));
      set.add(name);
    }
  };
  if (state === hit) {
    const again = new Set(docs);
    for (const r of read!) for (const name of state.readers.get(r) ?? []) again.add(name);
    for (const name of again) run(name, findByName(list, name));
    Object.assign(state, { inputs, list, reads });
  } else for (const doc of list) run(doc.name, doc);
  let errors = false;
  for (const ds of state.reported.values()) {
    appendAll(sink.diagnostics, ds);
    errors ||= ds.some((d) => d.severity === 'error');
  }
  if (!memo) return;
  if (errors) memo.lists.delete(key);
  else memo.lists.set(key, state);
}

/** Runs a one-document check, or replays what it reported for this very object before. */
export function once(
  memo: WeakMap<object, Diagnostic[]> | undefined,
  doc: object,
  sink: DiagnosticSink,
  run: () => void,
) {
  const hit = memo?.get(doc);
  if (hit) {
    appendAll(sink.diagnostics, hit);
    return;
  }
  const before = sink.diagnostics.length;
  run();
  memo?.set(doc, sink.diagnostics.slice(before));
}

/**
 * A check of `doc` that looks services up: replayed while every service it looked up is the same
 * object (or still missing). Results with errors are not kept: their "did you mean" hints depend
 * on every name, and a tree with errors is not applied anyway.
 */
export function onceCiting(
  memo: WeakMap<object, CitingResult> | undefined,
  doc: object,
  sink: DiagnosticSink,
  services: { list: readonly ServiceDoc[]; get(name: string): ServiceDoc | undefined },
  needService: NeedService,
  run: (need: NeedService) => void,
): string[] {
  const hit = memo?.get(doc);
  if (hit && (hit.services === services.list || hit.cited.every(([name, s]) => services.get(name) === s))) {
    appendAll(sink.diagnostics, hit.diagnostics);
    return hit.cited.map(([name]) => name);
  }
  const before = sink.diagnostics.length;
  const cited: CitingResult['cited'] = [];
  run((r, path, name) => {
    const s = needService(r, path, name);
    cited.push([name, s]);
    return s;
  });
  const diagnostics = sink.diagnostics.slice(before);
  if (memo && !diagnostics.some((d) => d.severity === 'error'))
    memo.set(doc, { diagnostics, services: services.list, cited });
  return cited.map(([name]) => name);
}
