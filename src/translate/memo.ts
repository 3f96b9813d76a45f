/**
 * Translation is pure and operator documents are immutable once parsed (the source cache hands
 * back the very same objects for unchanged files), so results can be memoized by document
 * identity: a one-file change re-translates only the documents of that file, and the encoder
 * recognises the untouched JSON objects without hashing them again.
 *
 * One memo belongs to one pipeline (it is passed in, never global): two servers in one process,
 * or two builds a test wants independent, share nothing.
 */
import { sameItems } from '../shared/same-items.ts';

export class TranslationMemo {
  private readonly single = new WeakMap<object, Map<string, unknown>>();
  private readonly multi = new WeakMap<object, Map<string, { parts: readonly object[]; value: unknown }>>();
  private readonly sections = new Map<string, { inputs: readonly unknown[]; value: unknown }>();

  /** `fn(doc)` computed once per (document object, key). */
  once<D extends object, R>(key: string, doc: D, fn: (doc: D) => R): R {
    let m = this.single.get(doc);
    if (!m) this.single.set(doc, (m = new Map<string, unknown>()));
    if (m.has(key)) return m.get(key) as R;
    const r = fn(doc);
    m.set(key, r);
    return r;
  }

  /** `fn()` for `doc`, recomputed only when any of `parts` is a different object than last time. */
  with<D extends object, R>(key: string, doc: D, parts: readonly object[], fn: () => R): R {
    let m = this.multi.get(doc);
    if (!m) this.multi.set(doc, (m = new Map<string, { parts: readonly object[]; value: unknown }>()));
    const hit = m.get(key);
    if (hit && sameItems(hit.parts, parts)) return hit.value as R;
    const value = fn();
    m.set(key, { parts, value });
    return value;
  }

  /**
   * A section of a build (one per node group and part): `fn` runs again only when one of `inputs`
   * is a different object than last time; it gets the previous value and inputs, to patch what
   * changed (src/shared/sorted-lists.ts) and keep the rest.
   */
  section<R>(
    key: string,
    inputs: readonly unknown[],
    fn: (previous: { value: R; inputs: readonly unknown[] } | undefined) => R,
  ): R {
    const hit = this.sections.get(key) as { inputs: readonly unknown[]; value: R } | undefined;
    if (hit && sameItems(hit.inputs, inputs)) return hit.value;
    const value = fn(hit);
    this.sections.set(key, { inputs, value });
    return value;
  }
}
