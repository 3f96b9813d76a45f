/**
 * `npm run build` (after the type check): what a deployment runs, in dist/.
 *
 * - The Envoy proto descriptor (dist/proto), so a start does not parse .proto files.
 * - yaml's ES-module build in one file (dist/vendor; see src/shared/yaml.ts), loaded at run time.
 * - The status page's script (dist/server/fleet-page.js), bundled for browsers.
 * - The server bundled with esbuild (dist/server): its commands and the workers it starts, with the
 *   packages it uses. Node resolves each import of each module by walking the file system, and
 *   loads CommonJS packages file by file: unbundled, that is a large share of a restart before the
 *   first answer. Entries and chunks share one folder, so a worker's URL beside its importer
 *   (`./serving-worker.js`) holds.
 *   Native and optional packages stay outside (better-sqlite3 loads a .node file; pg has optional
 *   native bindings), loaded from node_modules as before.
 */
import { build, type BuildOptions } from 'esbuild';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeProtoDescriptor } from '../xds/proto-root.ts';
import { projectPath, SERVER_DIR } from '../shared/paths.ts';
import { YAML_BUNDLE } from '../shared/yaml.ts';
import { PAGE_BUILD, PAGE_ENTRY, PAGE_SCRIPT } from '../admin/page-assets.ts';

/** The bundle's entry points: the command line, and each worker it starts by URL. */
const ENTRIES = ['src/cli/main.ts', 'src/source/parse-worker.ts', 'src/transports/grpc/serving-worker.ts'];
const OUTSIDE = ['better-sqlite3', 'pg'];
/** How both bundles are made: ES modules for the Node versions the project supports. */
const FOR_NODE: BuildOptions = { bundle: true, format: 'esm', platform: 'node', target: 'node22', logLevel: 'warning' };
const REQUIRE_BANNER = [
  "import { createRequire as __createRequire } from 'node:module';",
  'const require = __createRequire(import.meta.url);',
].join('\n');

/**
 * Bundles the server into `outdir` (a folder inside the project: it finds proto/ and migrations/
 * above it); `more` entries (a benchmark that runs the server's code in process) go with it.
 */
export async function bundleServer(outdir = SERVER_DIR, more: readonly string[] = []): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    entryPoints: [...ENTRIES, ...more].map((e) => projectPath(e)),
    outdir,
    entryNames: '[name]',
    ...FOR_NODE,
    splitting: true,
    external: OUTSIDE,
    sourcemap: true,
    // CommonJS packages in an ES module bundle still call require() (Node's own modules, optional
    // packages looked up at run time): give them one that resolves from the bundle's folder.
    banner: { js: REQUIRE_BANNER },
  });
  // The status page's script, served from beside the server (admin/page-assets.ts).
  await build({ ...PAGE_BUILD, entryPoints: [projectPath(...PAGE_ENTRY)], outfile: join(outdir, PAGE_SCRIPT) });
}

/** Everything `npm run build` makes (the release builds on it). */
export async function buildAll(): Promise<void> {
  writeProtoDescriptor();
  await build({ ...YAML_BUNDLE, ...FOR_NODE });
  await bundleServer();
}

/** What the build reads: a change to any of these makes `--if-changed` build again. */
const INPUTS = ['src', 'proto', 'package-lock.json', 'tsconfig.json'];
const STAMP = projectPath('dist', '.inputs-sha256');

/** One digest over the paths and contents of every input file, in a stable order. */
export function inputsDigest(): string {
  const hash = createHash('sha256');
  const add = (rel: string): void => {
    const full = projectPath(rel);
    let entries: string[] | undefined;
    try {
      entries = readdirSync(full).sort();
    } catch {
      entries = undefined;
    }
    if (entries) for (const e of entries) add(join(rel, e));
    else hash.update(`${rel}\0`).update(readFileSync(full)).update('\0');
  };
  for (const input of INPUTS) add(input);
  return hash.digest('hex');
}

function stampMatches(digest: string): boolean {
  try {
    return readFileSync(STAMP, 'utf8') === digest;
  } catch {
    return false;
  }
}

/**
 * Builds only when an input changed since the last build (what `npm start` runs, and what the tests
 * run once before any of them starts): a start after the first is a start, and nothing rewrites
 * dist/ under a server that runs from it.
 */
export async function buildIfChanged(): Promise<void> {
  const digest = inputsDigest();
  if (stampMatches(digest)) return;
  await buildAll();
  writeFileSync(STAMP, digest);
}

if (import.meta.main) {
  if (process.argv.includes('--if-changed')) await buildIfChanged();
  else {
    await buildAll();
    writeFileSync(STAMP, inputsDigest());
  }
}
