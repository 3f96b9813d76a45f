/**
 * The status page's script. The build bundles src/admin/page/fleet-page.ts beside the server
 * (dist/server/fleet-page.js, packaging/build.ts); run from source (development, tests), the server
 * bundles it on first request with esbuild, a development dependency there.
 */
import { readFile } from 'node:fs/promises';
import { projectPath } from '../shared/paths.ts';

export const PAGE_SCRIPT = 'fleet-page.js';
export const PAGE_ENTRY = ['src', 'admin', 'page', 'fleet-page.ts'] as const;
/** How the page is bundled, at build and from source alike: one script for current browsers. */
export const PAGE_BUILD = {
  bundle: true,
  format: 'iife',
  target: 'es2022',
  minify: true,
  logLevel: 'warning',
} as const;

let script: Promise<string> | undefined;

export function pageScript(): Promise<string> {
  script ??= import.meta.url.endsWith('.ts')
    ? bundleNow()
    : readFile(new URL(`./${PAGE_SCRIPT}`, import.meta.url), 'utf8');
  return script;
}

/** Not a literal, so that bundling the server leaves esbuild out (the bundle reads its own copy). */
const ESBUILD = 'esbuild';

async function bundleNow(): Promise<string> {
  const { build } = (await import(ESBUILD)) as typeof import('esbuild');
  const out = await build({ ...PAGE_BUILD, entryPoints: [projectPath(...PAGE_ENTRY)], write: false });
  return out.outputFiles[0]!.text;
}
