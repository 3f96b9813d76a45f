/**
 * Appends every item of `items` to `target`. `target.push(...items)` passes each item as an
 * argument and throws a RangeError past about 100,000 of them: lists that grow with the tree
 * (diagnostics, resources) are appended here instead.
 */
export function appendAll<T>(target: T[], items: readonly T[]): T[] {
  for (let i = 0; i < items.length; i++) target.push(items[i]!);
  return target;
}
