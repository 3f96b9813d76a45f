import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';
import { projectPath } from '../shared/paths.ts';

interface RootsManifest {
  package: string;
  includeDirs: string[];
  files: string[];
}

/** The Envoy protos, loaded once per process (immutable once loaded). */
let root: protobuf.Root | undefined;

function packageDir(name: string): string {
  const require = createRequire(import.meta.url);
  let dir = dirname(require.resolve(name));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === name) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package ${name} not found`);
    dir = parent;
  }
}

/**
 * The Envoy v3 protos, loaded once per process (about 100 ms) with keepCase, so message field names
 * are Envoy's snake_case names. Well-known google/protobuf types come from protobufjs itself.
 */
export function protoRoot(): protobuf.Root {
  if (root) return root;
  const manifest = JSON.parse(readFileSync(projectPath('proto', 'roots.json'), 'utf8')) as RootsManifest;
  const base = packageDir(manifest.package);
  const includeDirs = manifest.includeDirs.map((d) => join(base, d));
  const protobufDir = packageDir('protobufjs');
  const r = new protobuf.Root();
  r.resolvePath = (_origin: string, target: string) => {
    if (target.startsWith('google/protobuf/')) {
      return (protobuf.common as unknown as Record<string, unknown>)[target] ? target : join(protobufDir, target);
    }
    for (const dir of includeDirs) {
      const candidate = join(dir, target);
      if (existsSync(candidate)) return candidate;
    }
    return target;
  };
  r.loadSync(manifest.files, { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

export function lookupType(fullName: string): protobuf.Type {
  return protoRoot().lookupType(fullName);
}
