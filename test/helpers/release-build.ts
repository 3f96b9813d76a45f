/**
 * The release of the current sources, built once and shared by the release tests, which run at the
 * same time in processes of their own: the first to ask builds it under a lock, the others wait for
 * it. Kept under .tmp/releases/, keyed by the build's inputs and the commit (the release names it).
 * A test that writes beside the packages copies them into a folder of its own first.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildIfChanged, inputsDigest } from '../../src/packaging/build.ts';
import { buildRelease } from '../../src/packaging/release.ts';
import { projectPath } from '../../src/shared/paths.ts';

export type BuiltRelease = ReturnType<typeof buildRelease>;

/** A lock left by a build that died is taken over after this long (a build takes about half a minute). */
const STALE_LOCK_MS = 10 * 60_000;

export async function currentRelease(): Promise<BuiltRelease> {
  await buildIfChanged();
  const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: projectPath(), encoding: 'utf8' }).trim();
  const key = createHash('sha256').update(inputsDigest()).update(commit).digest('hex').slice(0, 16);
  const parent = projectPath('.tmp', 'releases');
  mkdirSync(parent, { recursive: true });
  const dir = join(parent, key);
  const done = join(dir, 'built.json');
  const lock = `${dir}.lock`;
  for (;;) {
    if (existsSync(done)) return JSON.parse(readFileSync(done, 'utf8')) as BuiltRelease;
    try {
      mkdirSync(lock);
    } catch {
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    try {
      // Builds of earlier sources are not needed again.
      for (const old of readdirSync(parent))
        if (old !== key && !old.endsWith('.lock')) rmSync(join(parent, old), { recursive: true, force: true });
      const built = buildRelease(dir);
      writeFileSync(done, JSON.stringify(built));
      return built;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}
