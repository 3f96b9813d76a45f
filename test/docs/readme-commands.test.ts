/**
 * What the README shows besides its commands (test/docs/checkout-commands.test.ts runs those): the
 * "A first tree" example is the file its next block serves, and the command line refuses a Node
 * older than it supports by name, not with a link error.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { tempDir } from '../helpers/tree.ts';

const README = readFileSync(projectPath('README.md'), 'utf8');

/** The fenced block of `lang` right after the heading `title`. */
function blockAfter(title: string, lang: string): string {
  const at = README.indexOf(`\n## ${title}\n`);
  assert.ok(at >= 0, `README has a "${title}" section`);
  const open = README.indexOf('```' + lang + '\n', at);
  const close = README.indexOf('\n```', open + 4);
  assert.ok(open > at && close > open, `a ${lang} block under "${title}"`);
  return README.slice(open + lang.length + 4, close);
}

const state = tempDir('fleetxds-readme-');

test('"A first tree" is the file the README serves next (config/first-tree.yaml)', () => {
  assert.is(`${blockAfter('A first tree', 'yaml')}\n`, readFileSync(projectPath('config', 'first-tree.yaml'), 'utf8'));
});

test('an older Node gets a message that names the version it needs', () => {
  const fake = join(state, 'node-20.mjs');
  writeFileSync(
    fake,
    "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.20.2' } });\n" +
      "Object.defineProperty(process, 'version', { value: 'v20.20.2' });\n",
  );
  const r = spawnSync(process.execPath, ['--import', fake, '--import', 'tsx', 'src/cli/main.ts', 'validate', 'x'], {
    cwd: projectPath(),
    encoding: 'utf8',
  });
  assert.is(r.status, 2);
  assert.match(r.stderr, /needs Node\.js 22\.22 or newer .* this is v20\.20\.2/);
  assert.match(r.stderr, /npm run fleetxds/);
  // Where the machine has a real older Node (a distribution's), the same message with it.
  for (const old of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(old)) continue;
    const v = spawnSync(old, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    const [major = 0, minor = 0] = v.split('.').map(Number);
    if (major > 22 || (major === 22 && minor >= 22)) continue;
    const real = spawnSync(old, ['--import', 'tsx', 'src/cli/main.ts', 'validate', 'x'], {
      cwd: projectPath(),
      encoding: 'utf8',
    });
    assert.match(real.stderr, /needs Node\.js 22\.22 or newer/, `${old} (${v}): ${real.stderr}`);
  }
});

test.run();
