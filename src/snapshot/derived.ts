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
 * `make(on, arg, key)` computed once per (object, space, key). A space holds at most `max` entries
 * (oldest dropped first): selections differ per client, and a hostile client must not grow them
 * forever. `make` takes what it needs as arguments instead of capturing it: derive sits on paths run
 * once per stream per push, and a closure made per call (with its context) was a third of what a
 * push allocated per stream, all of it garbage for the next scavenge.
 */
export function derive<O extends Derivable, A, T>(
  on: O,
  space: string,
  key: string,
  make: (on: O, arg: A, key: string) => T,
  arg: A,
  max = 64,
): T {
  on.derived ??= new Map();
  let values = on.derived.get(space);
  if (!values) on.derived.set(space, (values = new Map()));
  const hit = values.get(key);
  if (hit !== undefined || values.has(key)) return hit as T;
  const value = make(on, arg, key);
  if (values.size >= max) values.delete(values.keys().next().value as string);
  values.set(key, value);
  return value;
}
