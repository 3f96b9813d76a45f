import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { provenanceOf } from '../../src/source/git-info.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const git = (dir: string, ...args: string[]) =>
  spawnSync('git', ['-C', dir, '-c', 'user.name=Op', '-c', 'user.email=op@example.com', ...args], {
    encoding: 'utf8',
  });

test('a plain directory has no revision; a clean work tree is its HEAD commit; uncommitted edits are not', async () => {
  const dir = writeTree(BASE);
  assert.is(await provenanceOf(dir), undefined, 'outside any work tree');
  assert.is(git(dir, 'init', '-q').status, 0);
  git(dir, 'add', '.');
  assert.is(git(dir, 'commit', '-qm', 'fleet config').status, 0);
  const head = git(dir, 'rev-parse', 'HEAD').stdout.trim();
  const rev = await provenanceOf(dir);
  assert.is(rev?.commit, head);
  assert.is(rev?.subject, 'fleet config');
  assert.is(rev?.author, 'Op');
  writeFileSync(join(dir, 'services.yaml'), `${BASE['services.yaml']}\n`);
  assert.is(await provenanceOf(dir), undefined, 'a work tree with edits is not the commit');
});

test.run();
