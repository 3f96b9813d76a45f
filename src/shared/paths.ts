import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/** The nearest folder at or above `dir` whose package.json names package `name`. */
function packageAbove(dir: string, name: string): string {
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === name) return dir;
      } catch {
        /* keep walking */
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package ${name} not found`);
    dir = parent;
  }
}

/** The folder of an installed package (by its entry point: packages need not export package.json). */
export function packageDir(name: string): string {
  return packageAbove(dirname(createRequire(import.meta.url).resolve(name)), name);
}

/** The version of an installed package (`dir`: its folder, when the caller has it already). */
export function packageVersion(name: string, dir = packageDir(name)): string {
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * The project root (the folder holding fleetxds' package.json). Works from `src/` under tsx and
 * from the bundle in `dist/server/` after a build, so migrations/ and proto/ are found without
 * copying them.
 */
export function projectRoot(): string {
  return (cachedRoot ??= packageAbove(dirname(fileURLToPath(import.meta.url)), 'fleetxds'));
}

export function projectPath(...parts: string[]): string {
  return join(projectRoot(), ...parts);
}

/** Where `npm run build` bundles the server (src/packaging/build.ts), and the command line in it. */
export const SERVER_DIR = projectPath('dist', 'server');
export const SERVER_ENTRY = join(SERVER_DIR, 'main.js');
