/**
 * The README's commands work as written. The server runs as `npm start` runs it (the bundled
 * example, the settings in config/fleetxds.yaml, the same ports), with its state in a temporary
 * folder; then every line of the "Look around" block runs in a shell from the project root, as a
 * newcomer pastes it. The "A first tree" example is a valid tree. And the command line refuses a
 * Node older than it supports by name, not with a link error.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { spawnServer, type ServerProcess } from '../helpers/process.ts';
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

const sh = (line: string) =>
  spawnSync('bash', ['-c', line], { cwd: projectPath(), encoding: 'utf8', timeout: 60_000, env: process.env });

let server: ServerProcess | undefined;
const state = tempDir('fleetxds-readme-');

test.before(async () => {
  // As `npm start` serves: the example settings and ports; the database and rendered files elsewhere.
  server = await spawnServer(projectPath('config', 'fleetxds.yaml'), {
    FLEETXDS_GRPC_LISTEN: '127.0.0.1:18000',
    FLEETXDS_ADMIN_LISTEN: '127.0.0.1:18001',
    FLEETXDS_REST_LISTEN: '127.0.0.1:18002',
    FLEETXDS_DATABASE: join(state, 'fleetxds.db'),
    FLEETXDS_FILES_DIR: join(state, 'envoy-files'),
  });
});

test.after(async () => {
  await server?.stop();
});

test('every "Look around" command runs as written and prints what it promises', () => {
  const lines = blockAfter('Look around', 'sh')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
  assert.ok(lines.length >= 6, lines.join('\n'));
  const out = new Map<string, string>();
  for (const line of lines) {
    const r = sh(line);
    assert.is(r.status, 0, `${line}\n${r.stderr}`);
    assert.ok(r.stdout.trim().length > 0, `${line} printed nothing`);
    out.set(line, r.stdout);
  }
  const find = (part: string) => [...out].find(([l]) => l.includes(part))?.[1] ?? '';
  assert.match(find('/api/v1/config'), /"versionId"/);
  assert.match(find('discovery:clusters'), /"resources"/);
  assert.match(find('-- validate'), /valid/i);
  assert.match(find('-- render'), /"name"/);
  assert.match(find('-- bootstrap'), /"dynamic_resources"|"node"/);
  assert.match(find('-- history'), /#1 /);
  assert.match(find('-- explain'), /^node edge-1: group edge/m);
});

test('"A first tree" is a valid tree', () => {
  const dir = tempDir('fleetxds-first-tree-');
  writeFileSync(join(dir, 'first.yaml'), blockAfter('A first tree', 'yaml'));
  const r = sh(`npm run fleetxds --silent -- validate ${dir}`);
  assert.is(r.status, 0, r.stdout + r.stderr);
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
