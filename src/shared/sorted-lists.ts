/**
 * Lists in name order, and how one was patched from another. The assembler patches the model's
 * lists where documents changed (src/model/assemble.ts) and records which names it changed; every
 * later stage that keeps its output from the last build (checks, translation, encoding, type
 * snapshots) asks for those names and patches its own list the same way, so a one-file change costs
 * the documents it changed, not the size of the tree.
 */

export interface Named {
  readonly name: string;
}

/** First index whose name is not below `name` (the list in name order). */
export function lowerBound(list: readonly Named[], name: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The item named `name`, found by bisection. */
export function findByName<T extends Named>(list: readonly T[], name: string): T | undefined {
  const i = lowerBound(list, name);
  const item = list[i];
  return item?.name === name ? item : undefined;
}

/**
 * A copy of `list` (in name order) with each of `names` replaced by `make(name)`: inserted where it
 * was missing, removed where `make` gives undefined. Splicing moves the items after it (a memory
 * move per name, not a visit of every item).
 */
export function patchByName<T extends Named>(
  list: readonly T[],
  names: Iterable<string>,
  make: (name: string) => T | undefined,
): T[] {
  const out = list.slice();
  for (const name of names) {
    const item = make(name);
    const i = lowerBound(out, name);
    const present = i < out.length && out[i]!.name === name;
    if (item && present) out[i] = item;
    else if (item) out.splice(i, 0, item);
    else if (present) out.splice(i, 1);
  }
  return out;
}

interface Delta {
  /** Weak: a list must not keep every list before it alive through a chain of deltas. */
  readonly from: WeakRef<readonly object[]>;
  readonly names: ReadonlySet<string>;
}

const DELTAS = new WeakMap<readonly object[], Delta>();

/** Records that `list` is `from` with the items of `names` replaced, added or removed. */
export function recordDelta(list: readonly object[], from: readonly object[], names: ReadonlySet<string>): void {
  DELTAS.set(list, { from: new WeakRef(from), names });
}

const NONE: ReadonlySet<string> = new Set();

/**
 * The names whose items differ between `from` and `to`: none when they are the same list, the
 * recorded names when `to` was patched from `from`, undefined when nothing is known (then the
 * caller visits every item).
 */
export function changedNames(
  from: readonly object[] | undefined,
  to: readonly object[],
): ReadonlySet<string> | undefined {
  if (from === to) return NONE;
  const d = DELTAS.get(to);
  return d && from !== undefined && d.from.deref() === from ? d.names : undefined;
}

/** The list `list` was patched from, if recorded (and still alive), with the names changed. */
export function patchedFrom(
  list: readonly object[],
): { from: readonly object[]; names: ReadonlySet<string> } | undefined {
  const d = DELTAS.get(list);
  const from = d?.from.deref();
  return from && { from, names: d!.names };
}
