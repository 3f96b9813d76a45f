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

/** The values of one space of `on`, made on first use. */
function spaceOf(on: Derivable, space: string): Map<string, unknown> {
  on.derived ??= new Map();
  let values = on.derived.get(space);
  if (!values) on.derived.set(space, (values = new Map<string, unknown>()));
  return values;
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
  const values = spaceOf(on, space);
  const hit = values.get(key);
  if (hit !== undefined || values.has(key)) return hit as T;
  const value = make(on, arg, key);
  if (values.size >= max) values.delete(values.keys().next().value as string);
  values.set(key, value);
  return value;
}

/** Bytes held per space of deriveWithin (beside the space, so the space stays a plain Map). */
const HELD_BYTES = new WeakMap<Map<string, unknown>, number>();

export interface DeriveLimits<T> {
  entries: number;
  bytes: number;
  /** What keeping the value holds, in bytes. */
  weigh(value: T): number;
}

/**
 * derive() for values keyed by what clients send: the space holds at most `entries` values and
 * `bytes` bytes (oldest dropped first), and a value larger than `bytes` alone is returned unkept.
 */
export function deriveWithin<O extends Derivable, A, T>(
  on: O,
  space: string,
  key: string,
  make: (on: O, arg: A, key: string) => T,
  arg: A,
  limits: DeriveLimits<T>,
): T {
  const values = spaceOf(on, space);
  const hit = values.get(key);
  if (hit !== undefined) return hit as T;
  const value = make(on, arg, key);
  const weight = limits.weigh(value);
  if (weight > limits.bytes) return value;
  let held = HELD_BYTES.get(values) ?? 0;
  while (values.size > 0 && (values.size >= limits.entries || held + weight > limits.bytes)) {
    const oldest = values.keys().next().value as string;
    held -= limits.weigh(values.get(oldest) as T);
    values.delete(oldest);
  }
  values.set(key, value);
  HELD_BYTES.set(values, held + weight);
  return value;
}
