/**
 * Documents are frozen when they enter the model. The caches of the write path (parsed files,
 * translation memos, derived lists, check memos) take "the same object" to mean "the same
 * content": a translator or check that changed a document in place would leave every cache
 * serving the old content. Freezing makes such a change throw where it is made.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const v of Object.values(value as object)) deepFreeze(v);
  return value;
}
