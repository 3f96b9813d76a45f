import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/**
 * The project root (the folder holding fleetxds' package.json). Works from `src/` under tsx and
 * from `dist/src/` after a build, so migrations/ and proto/ are found without copying them.
 */
export function projectRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if (JSON.parse(readFileSync(pkg, 'utf8')).name === 'fleetxds') return (cachedRoot = dir);
      } catch {
        /* keep walking */
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('fleetxds project root not found');
    dir = parent;
  }
}

export function projectPath(...parts: string[]): string {
  return join(projectRoot(), ...parts);
}
