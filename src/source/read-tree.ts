import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import { parseYamlFile, retainOnly } from './parse-yaml.ts';
import type { ParsedFile, SourceSet } from './types.ts';

export interface TreeLimits {
  /** Largest single YAML file accepted (bytes). */
  maxFileBytes: number;
  /** Largest whole tree accepted (bytes). */
  maxTreeBytes: number;
  maxFiles: number;
}

export const DEFAULT_LIMITS: TreeLimits = { maxFileBytes: 4 * 1024 * 1024, maxTreeBytes: 256 * 1024 * 1024, maxFiles: 50_000 };

/** Editors' and git's transient files; never part of the config. */
export function isIgnoredName(name: string): boolean {
  return name.startsWith('.') || name.endsWith('~') || name.endsWith('.swp') || name.endsWith('.swx') || name.endsWith('.tmp') || name.startsWith('#');
}

export function isConfigFile(name: string): boolean {
  return /\.ya?ml$/i.test(name) && !isIgnoredName(name);
}

/**
 * Reads every YAML file below `dir` (recursively, skipping dot-folders such as .git) and parses it.
 * The directory is resolved once up front so a symlink swap of `dir` during the read cannot mix two
 * trees. Symlinked files inside the tree are refused: they could point anywhere on the host.
 */
export async function readTree(dir: string, limits: TreeLimits = DEFAULT_LIMITS): Promise<SourceSet> {
  const diagnostics: Diagnostic[] = [];
  let root: string;
  try {
    root = await realpath(dir);
  } catch (err) {
    diagnostics.push({ code: Codes.FILE_UNREADABLE, severity: 'error', message: `config directory ${dir} is not readable: ${(err as Error).message}` });
    return { root: dir, treeHash: sha256Hex(''), files: [], diagnostics };
  }
  const paths: string[] = [];
  await walk(root, root, paths, diagnostics, limits);
  paths.sort();
  const files: ParsedFile[] = [];
  let total = 0;
  for (const rel of paths) {
    const abs = join(root, ...rel.split('/'));
    let text: string;
    try {
      const st = await lstat(abs);
      if (st.size > limits.maxFileBytes) {
        diagnostics.push({ code: Codes.YAML_LIMIT, severity: 'error', message: `file is ${st.size} bytes; the limit is ${limits.maxFileBytes}`, location: { file: rel, line: 1, column: 1 } });
        continue;
      }
      total += st.size;
      if (total > limits.maxTreeBytes) {
        diagnostics.push({ code: Codes.YAML_LIMIT, severity: 'error', message: `tree is larger than ${limits.maxTreeBytes} bytes` });
        break;
      }
      text = await readFile(abs, 'utf8');
    } catch (err) {
      diagnostics.push({ code: Codes.FILE_UNREADABLE, severity: 'error', message: (err as Error).message, location: { file: rel, line: 1, column: 1 } });
      continue;
    }
    files.push(parseYamlFile(rel, text));
  }
  retainOnly(files);
  return { root, treeHash: combineHashes(files), files, diagnostics };
}

function combineHashes(files: readonly { file: string; hash: string }[]): string {
  return sha256Hex(files.map((f) => `${f.file}\u0000${f.hash}`).join('\n'));
}

/**
 * The tree hash `readTree` would report, without parsing anything (hashing 4 MB takes ~5 ms,
 * parsing it with `yaml` seconds): lets an apply of an unchanged tree, such as the one at every
 * start, return at once. Undefined if the tree cannot be listed cleanly.
 */
export async function treeHashOf(dir: string, limits: TreeLimits = DEFAULT_LIMITS): Promise<string | undefined> {
  const diagnostics: Diagnostic[] = [];
  let root: string;
  try {
    root = await realpath(dir);
  } catch {
    return undefined;
  }
  const paths: string[] = [];
  await walk(root, root, paths, diagnostics, limits);
  if (diagnostics.length) return undefined;
  paths.sort();
  const files: { file: string; hash: string }[] = [];
  for (const rel of paths) {
    try {
      files.push({ file: rel, hash: sha256Hex(await readFile(join(root, ...rel.split('/')), 'utf8')) });
    } catch {
      return undefined;
    }
  }
  return combineHashes(files);
}

async function walk(root: string, dir: string, out: string[], diagnostics: Diagnostic[], limits: TreeLimits): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    diagnostics.push({ code: Codes.FILE_UNREADABLE, severity: 'error', message: `cannot list ${relative(root, dir) || '.'}: ${(err as Error).message}` });
    return;
  }
  for (const e of entries) {
    if (isIgnoredName(e.name)) continue;
    const abs = join(dir, e.name);
    const rel = relative(root, abs).split(sep).join('/');
    if (e.isDirectory()) {
      await walk(root, abs, out, diagnostics, limits);
    } else if (e.isSymbolicLink()) {
      if (isConfigFile(e.name)) {
        diagnostics.push({ code: Codes.FILE_UNREADABLE, severity: 'error', message: 'symbolic links inside the config tree are refused (they could point outside it)', location: { file: rel, line: 1, column: 1 } });
      }
    } else if (e.isFile() && isConfigFile(e.name)) {
      if (out.length >= limits.maxFiles) {
        diagnostics.push({ code: Codes.YAML_LIMIT, severity: 'error', message: `more than ${limits.maxFiles} YAML files` });
        return;
      }
      out.push(rel);
    }
  }
}
