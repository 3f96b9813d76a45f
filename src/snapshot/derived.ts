/**
 * Values computed from an immutable snapshot object (a type snapshot, an encoded resource) and
 * shared by every client that needs them: response bodies, per-transport views, delta framings,
 * REST selections. They are kept on the object itself, so they live exactly as long as the
 * snapshot does and belong to whoever owns it; nothing is global to the process.
 */
export interface Derivable {
  /** space -> key -> value. Mutable on purpose: a cache, not part of the snapshot's content. */
  derived?: Map<string, Map<string, unknown>>;
}

/**
 * `make()` computed once per (object, space, key). A space holds at most `max` entries (oldest
 * dropped first): selections differ per client, and a hostile client must not grow them forever.
 */
export function derive<T>(on: Derivable, space: string, key: string, make: () => T, max = 64): T {
  on.derived ??= new Map();
  let values = on.derived.get(space);
  if (!values) on.derived.set(space, (values = new Map()));
  if (values.has(key)) return values.get(key) as T;
  const value = make();
  if (values.size >= max) values.delete(values.keys().next().value as string);
  values.set(key, value);
  return value;
}
