import { resolve, sep } from 'node:path';
import { NAME_PATTERN } from '../../model/schema.ts';

/** Validation's name rule: a valid node group name is always a safe folder name. */
const SAFE_SEGMENT = new RegExp(NAME_PATTERN);

/** A node group name used as a directory: allow-listed, never `.`/`..`, never a path. */
export function groupDirName(group: string): string {
  if (!SAFE_SEGMENT.test(group)) throw new Error(`refusing node group name "${group}" as a directory name`);
  return group;
}

/**
 * A resource name as a file name: characters outside [A-Za-z0-9._-] are %-encoded (so `/` can
 * never appear), and a leading dot is encoded (no hidden files, no `.`/`..`). Injective.
 */
export function resourceFileName(name: string): string {
  let out = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const c = String.fromCharCode(byte);
    out +=
      /[A-Za-z0-9_-]/.test(c) || (c === '.' && out !== '') ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out || '%';
}

/** Joins and checks the result stays inside `base`. */
export function inside(base: string, ...parts: string[]): string {
  const root = resolve(base);
  const p = resolve(root, ...parts);
  if (p !== root && !p.startsWith(root + sep)) throw new Error(`path ${p} escapes ${root}`);
  return p;
}
