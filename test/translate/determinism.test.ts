/**
 * Replicas fed the same commit must serve the same bytes and versions. Builds in one process can
 * share hidden state (caches, object identity), so this compares builds made by separate
 * processes: the same tree, and a copy of it written in reverse file order (other inode and
 * directory order) under another time zone and locale.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';
import { acceptedCases } from '../helpers/golden-cases.ts';
import { tempDir } from '../helpers/tree.ts';

function digest(dir: string, env: Record<string, string> = {}): { treeHash: string; groups: Record<string, unknown> } {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', projectPath('test', 'helpers', 'build-digest.ts'), dir],
    {
      cwd: projectPath(),
      env: { ...process.env, ...env },
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return JSON.parse(out);
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

for (const { root, tree } of cases) {
  test(`two processes build the same bytes and versions: ${relative(projectPath(), join(root, tree))}`, () => {
    const dir = tempDir('fleetxds-determinism-');
    cpSync(root, dir, { recursive: true });
    const a = digest(join(dir, tree));
    const env = { TZ: 'Pacific/Chatham', LANG: 'tr_TR.UTF-8', LC_ALL: 'tr_TR.UTF-8' };
    const b = digest(join(reversedCopy(dir), tree), env);
    assert.ok(Object.keys(a.groups).length > 0, 'the tree builds groups');
    assert.equal(b.groups, a.groups);
    assert.is(b.treeHash, a.treeHash);
  });
}

test.run();
