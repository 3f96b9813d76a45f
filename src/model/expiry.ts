/**
 * Expiring overrides: which parts of a model have a deadline (a route, a fault, a Runtime
 * document), when each one falls due, and the model as served at a given time, without the ones
 * past their deadline. `for` counts from the first version that served the override: the server
 * keeps when each one started (by its content, so an edit starts a new window) and hands them in.
 *
 * A deadline already past is refused for an override never served (its `until` is a mistake), and
 * only warned about for one that was (the tree still holds what has lapsed: it is left out, and the
 * operator is asked to remove it). Without a history (`fleetxds validate`) every past `until` is refused.
 */
import { hasDeadline, type Expiring } from '../features/kit/deadline.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { Codes, sortDiagnostics, type Diagnostic, type PathSegment } from '../shared/diagnostics.ts';
import { parseDurationMs } from '../shared/duration.ts';
import { sha256Hex } from '../shared/hash.ts';
import { DiagnosticSink, type DocRef } from './diagnostic-sink.ts';
import type { VirtualHostDoc } from './schema.ts';
import { docOf, originOf, recordOrigin, type Model } from './types.ts';

export type OverrideKind = 'route' | 'fault' | 'runtime';

/** A part of the model with a deadline. */
export interface Override {
  /** Its content's hash (with the document it is in): the same override in the next tree has the same id. */
  readonly id: string;
  readonly kind: OverrideKind;
  readonly doc: { readonly kind: 'VirtualHost' | 'Runtime'; readonly name: string };
  /** Where it is in its document. */
  readonly path: readonly PathSegment[];
  readonly deadline: Expiring;
  /** How operators read it: `route "maintenance" of VirtualHost "shop"`. */
  readonly what: string;
}

/** An override with its window resolved. */
export interface Window {
  readonly id: string;
  readonly what: string;
  /** When it was first served (ms since the epoch). */
  readonly startedAt: number;
  /** When it falls due (ms since the epoch). */
  readonly deadline: number;
}

export interface ExpiryResult {
  /** The model as served: `model` itself when nothing is past its deadline. */
  readonly model: Model;
  /** Every override served now, with its deadline. */
  readonly active: readonly Window[];
  /** Overrides of the tree past their deadline, left out. */
  readonly expired: readonly Window[];
  readonly diagnostics: Diagnostic[];
}

function overrideId(doc: Override['doc'], kind: OverrideKind, part: unknown): string {
  return sha256Hex(canonicalJson([doc.kind, doc.name, kind, part]));
}

const routeName = (r: { name?: string }, i: number) => (r.name ? `route "${r.name}"` : `route ${i + 1}`);

/** A virtual host's overrides, by document: a parsed document never changes, and most have none. */
const VHOST_OVERRIDES = new WeakMap<VirtualHostDoc, readonly Override[]>();

function vhostOverrides(vh: VirtualHostDoc): readonly Override[] {
  const known = VHOST_OVERRIDES.get(vh);
  if (known) return known;
  const out: Override[] = [];
  const doc = { kind: 'VirtualHost', name: vh.name } as const;
  const add = (kind: OverrideKind, path: PathSegment[], part: Expiring, what: string) =>
    out.push({ id: overrideId(doc, kind, part), kind, doc, path, deadline: part, what });
  if (hasDeadline(vh.fault)) add('fault', ['fault'], vh.fault, `the fault of VirtualHost "${vh.name}"`);
  vh.routes.forEach((r, i) => {
    if (hasDeadline(r)) add('route', ['routes', i], r, `${routeName(r, i)} of VirtualHost "${vh.name}"`);
    if (hasDeadline(r.fault))
      add('fault', ['routes', i, 'fault'], r.fault, `the fault of ${routeName(r, i)} of VirtualHost "${vh.name}"`);
  });
  const frozen = out.length ? out : NO_OVERRIDES;
  VHOST_OVERRIDES.set(vh, frozen);
  return frozen;
}

const NO_OVERRIDES: readonly Override[] = Object.freeze([]);

/** Every override of a model, in document order. */
export function overridesOf(model: Model): Override[] {
  const out: Override[] = [];
  for (const vh of model.virtualHosts) for (const o of vhostOverrides(vh)) out.push(o);
  for (const rt of model.runtimes ?? []) {
    if (!hasDeadline(rt)) continue;
    const doc = { kind: 'Runtime', name: rt.name } as const;
    out.push({
      id: overrideId(doc, 'runtime', rt),
      kind: 'runtime',
      doc,
      path: [],
      deadline: rt,
      what: `Runtime "${rt.name}"`,
    });
  }
  return out;
}

/** When an override falls due, given when it started. */
export function deadlineOf(d: Expiring, startedAt: number): number {
  return d.until !== undefined ? Date.parse(d.until) : startedAt + (parseDurationMs(d.for!) ?? 0);
}

/** The soonest deadline of what is served, if any. */
export function nextDeadline(active: readonly Window[]): number | undefined {
  let next: number | undefined;
  for (const w of active) if (next === undefined || w.deadline < next) next = w.deadline;
  return next;
}

/**
 * The model as served at `now`. `started`: when each override the server has served began (by
 * id); an override not in it starts now.
 */
export function resolveExpiry(
  model: Model,
  at: { readonly now: number; readonly started: ReadonlyMap<string, number> },
  textOf: (file: string) => string | undefined,
): ExpiryResult {
  const overrides = overridesOf(model);
  const sink = new DiagnosticSink(textOf);
  if (!overrides.length) return { model, active: [], expired: [], diagnostics: sink.diagnostics };
  const refOf = (o: Override): DocRef | undefined => {
    const doc = docOf(model, o.doc.kind, o.doc.name);
    const origin = doc && originOf(doc);
    return origin && { origin, kind: o.doc.kind, name: o.doc.name };
  };
  const active: Window[] = [];
  const expired: Window[] = [];
  const lapsed = new Set<Override>();
  for (const o of overrides) {
    const known = at.started.get(o.id);
    const startedAt = known ?? at.now;
    const w: Window = { id: o.id, what: o.what, startedAt, deadline: deadlineOf(o.deadline, startedAt) };
    if (w.deadline > at.now) {
      active.push(w);
      continue;
    }
    if (known === undefined)
      sink.error(
        Codes.INVALID_VALUE,
        refOf(o),
        deadlinePath(o),
        `the deadline of ${o.what} is in the past (${new Date(w.deadline).toISOString()}): it would never be served`,
      );
    else {
      sink.warn(
        Codes.INVALID_VALUE,
        refOf(o),
        deadlinePath(o),
        `${o.what} expired at ${new Date(w.deadline).toISOString()} and is no longer served: remove it from the tree`,
      );
      expired.push(w);
      lapsed.add(o);
    }
  }
  checkBases(model, overrides, sink, refOf);
  return {
    model: lapsed.size ? without(model, lapsed) : model,
    active,
    expired,
    diagnostics: sortDiagnostics(sink.diagnostics),
  };
}

/**
 * An override needs something to return to: a virtual host whose every route has a deadline would
 * be left with no route at all.
 */
function checkBases(
  model: Model,
  overrides: readonly Override[],
  sink: DiagnosticSink,
  refOf: (o: Override) => DocRef | undefined,
): void {
  const expiringRoutes = new Map<string, Override[]>();
  for (const o of overrides)
    if (o.kind === 'route') expiringRoutes.set(o.doc.name, [...(expiringRoutes.get(o.doc.name) ?? []), o]);
  for (const [name, routes] of expiringRoutes) {
    const vh = docOf(model, 'VirtualHost', name) as VirtualHostDoc | undefined;
    if (!vh || routes.length < vh.routes.length) continue;
    const last = routes[routes.length - 1]!;
    sink.error(
      Codes.INVALID_VALUE,
      refOf(last),
      deadlinePath(last),
      `every route of VirtualHost "${name}" has a deadline: once they lapse it has none to return to (add a route ` +
        'without until or for)',
    );
  }
}

/** Where an override's deadline is written in its document (diagnostics point there). */
const deadlinePath = (o: Override): PathSegment[] => [...o.path, o.deadline.until !== undefined ? 'until' : 'for'];

/** A copy of a document that keeps its origin (diagnostics and the store locate it by its origin). */
function copyOf<T extends object>(doc: T, changed: Partial<T>): T {
  const copy = { ...doc, ...changed };
  const origin = originOf(doc);
  if (origin) recordOrigin(copy, origin);
  return copy;
}

/** The model without the lapsed overrides: routes removed, faults dropped, Runtime documents removed. */
function without(model: Model, lapsed: ReadonlySet<Override>): Model {
  const byDoc = new Map<string, Override[]>();
  for (const o of lapsed) {
    const key = `${o.doc.kind}/${o.doc.name}`;
    byDoc.set(key, [...(byDoc.get(key) ?? []), o]);
  }
  const virtualHosts = model.virtualHosts.map((vh) => {
    const gone = byDoc.get(`VirtualHost/${vh.name}`);
    if (!gone) return vh;
    const routeGone = new Set(gone.filter((o) => o.kind === 'route').map((o) => o.path[1] as number));
    const faultGone = new Set(gone.filter((o) => o.kind === 'fault' && o.path.length === 3).map((o) => o.path[1]));
    const routes = vh.routes.flatMap((r, i) => {
      if (routeGone.has(i)) return [];
      if (!faultGone.has(i)) return [r];
      const { fault: _dropped, ...rest } = r;
      return [rest];
    });
    const dropVhFault = gone.some((o) => o.kind === 'fault' && o.path.length === 1);
    const copy = copyOf(vh, { routes });
    if (dropVhFault) delete (copy as { fault?: unknown }).fault;
    return copy;
  });
  const runtimes = model.runtimes?.filter((rt) => !byDoc.has(`Runtime/${rt.name}`));
  return { ...model, virtualHosts, ...(model.runtimes && { runtimes }) };
}
