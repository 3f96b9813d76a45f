/**
 * Whether two lists hold the very same objects in the same order: how memoized work keyed by its
 * inputs (a model list, a document) tells that nothing it read was replaced.
 */
export function sameItems(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
