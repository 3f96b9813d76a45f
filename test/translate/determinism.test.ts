/**
 * Replicas fed the same commit must serve the same bytes and versions. Builds in one process can
 * share hidden state (caches, object identity), so this compares builds made by separate
 * processes: every tree, and a copy of each written in reverse file order (other inode and
 * directory order) under another time zone and locale. Each process builds its trees in the same
 * order, so what one build leaves to the next is the same on both sides.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';
import { acceptedCases } from '../helpers/golden-cases.ts';
import { tempDir } from '../helpers/tree.ts';

type Digest = { treeHash: string; groups: Record<string, unknown> };

/** What each tree builds to, built one after another by one new process (its own memory, its own clock). */
function digests(dirs: readonly string[], env: Record<string, string> = {}): Digest[] {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', projectPath('test', 'helpers', 'build-digest.ts'), ...dirs],
    {
      cwd: projectPath(),
      env: { ...process.env, ...env },
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  return JSON.parse(out) as Digest[];
}

function filesOf(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesOf(p, base) : [relative(base, p)];
  });
}

/** The same files, created in reverse order. */
function reversedCopy(dir: string): string {
  const to = tempDir('fleetxds-determinism-');
  for (const rel of filesOf(dir).sort().reverse()) {
    mkdirSync(join(to, rel, '..'), { recursive: true });
    writeFileSync(join(to, rel), readFileSync(join(dir, rel)));
  }
  return to;
}

/** A folder to copy whole, and the config tree inside it (the example's secrets live beside its tree). */
const cases = [
  { root: projectPath('config'), tree: 'services' },
  ...acceptedCases().map((c) => ({ root: dirname(c.input), tree: basename(c.input) })),
];

// Every tree copied, and copied again in reverse file order; one process builds the copies, another
// (in another time zone and locale) the reversed ones: two processes in all, not two per tree.
const copies = cases.map(({ root, tree }) => {
  const dir = tempDir('fleetxds-determinism-');
  cpSync(root, dir, { recursive: true });
  return { name: relative(projectPath(), join(root, tree)), a: join(dir, tree), b: join(reversedCopy(dir), tree) };
});
let a: Digest[] = [];
let b: Digest[] = [];

test.before(() => {
  a = digests(copies.map((c) => c.a));
  b = digests(
    copies.map((c) => c.b),
    { TZ: 'Pacific/Chatham', LANG: 'tr_TR.UTF-8', LC_ALL: 'tr_TR.UTF-8' },
  );
});

copies.forEach(({ name }, i) => {
  test(`two processes build the same bytes and versions: ${name}`, () => {
    assert.ok(Object.keys(a[i]!.groups).length > 0, 'the tree builds groups');
    assert.equal(b[i]!.groups, a[i]!.groups);
    assert.is(b[i]!.treeHash, a[i]!.treeHash);
  });
});

test.run();
