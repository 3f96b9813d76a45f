/**
 * Where a value sits in a JSON message, as "a.b[2].c" or `m["key"]`. Converting a resource visits
 * every field and finds a problem in almost none, so a path is kept as a link to its parent and
 * written out only for a problem: building each field's path as text cost more than converting it.
 */

/** A map entry's key (rendered `["key"]`), unlike a field name. */
export class MapKey {
  constructor(readonly key: string) {}
}

export type PathKey = string | number | MapKey;

export class JsonPath {
  static readonly ROOT = new JsonPath(undefined, '');

  private constructor(
    private readonly parent: JsonPath | undefined,
    private readonly key: PathKey,
  ) {}

  /** The path of `key` below this one. */
  at(key: PathKey): JsonPath {
    return new JsonPath(this, key);
  }

  toString(): string {
    return this.parent ? pathText(this.parent.toString(), this.key) : '';
  }
}

/** `base` followed by `key`, as text: "base.key", "base[2]", `base["key"]` ("key" at the root). */
export function pathText(base: string, key: PathKey): string {
  if (typeof key === 'number') return `${base}[${key}]`;
  if (key instanceof MapKey) return `${base}[${JSON.stringify(key.key)}]`;
  return base ? `${base}.${key}` : key;
}

export interface ProtoIssue {
  path: string;
  message: string;
}

/** Reports `message` for the value at `key` below `at` (at `at` itself without a key). */
export function issueAt(issues: ProtoIssue[], at: JsonPath, key: PathKey | undefined, message: string): void {
  issues.push({ path: key === undefined ? at.toString() : pathText(at.toString(), key), message });
}
