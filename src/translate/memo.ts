/**
 * Translation is pure and operator documents are immutable once parsed (the parse cache hands
 * back the very same objects for unchanged files), so results can be memoized by document
 * identity: a one-file change re-translates only the documents of that file, and the encoder
 * recognises the untouched JSON objects without hashing them again.
 */
const single = new WeakMap<object, Map<string, unknown>>();

/** `fn(doc)` computed once per (document object, key). */
export function memo1<D extends object, R>(key: string, doc: D, fn: (doc: D) => R): R {
  let m = single.get(doc);
  if (!m) single.set(doc, (m = new Map()));
  if (m.has(key)) return m.get(key) as R;
  const r = fn(doc);
  m.set(key, r);
  return r;
}

/** `fn(doc, parts)` recomputed only when any of `parts` is a different object than last time. */
const multi = new WeakMap<object, Map<string, { parts: readonly object[]; value: unknown }>>();
export function memoWith<D extends object, R>(key: string, doc: D, parts: readonly object[], fn: () => R): R {
  let m = multi.get(doc);
  if (!m) multi.set(doc, (m = new Map()));
  const hit = m.get(key);
  if (hit && hit.parts.length === parts.length && hit.parts.every((p, i) => p === parts[i])) return hit.value as R;
  const value = fn();
  m.set(key, { parts, value });
  return value;
}
