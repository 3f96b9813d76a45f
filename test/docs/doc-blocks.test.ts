/**
 * Every command in the docs is run by a test (test/helpers/doc-blocks.ts says how a block names
 * its runner): a block of commands without a runner, or a fenced block without a language (where a
 * command block could hide), fails here with its page and line.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { projectPath } from '../../src/shared/paths.ts';
import { commandBlocks, docBlocks, sessionScript } from '../helpers/doc-blocks.ts';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

test('every fenced block names its language; every block of commands names the test that runs it', () => {
  const blocks = docBlocks();
  assert.ok(blocks.length > 20, `${blocks.length} blocks`);
  const unnamed = blocks.filter((b) => !b.lang).map((b) => `${b.page}:${b.line}`);
  assert.equal(unnamed, [], 'blocks without a language (text for diagrams and output)');
  const unrun = commandBlocks()
    .filter((b) => !b.marker)
    .map((b) => `${b.page}:${b.line}`);
  assert.equal(unrun, [], 'command blocks without <!-- run: ... --> or <!-- not run: reason -->');
  for (const b of commandBlocks())
    if (b.marker && 'notRun' in b.marker) assert.ok(b.marker.notRun.length > 20, `${b.page}:${b.line}: say why`);
});

test('the README installs and tests with the two commands CI runs', () => {
  const two = commandBlocks().find((b) => b.page === 'README.md')!;
  assert.match(two.text, /^bash \.ci\/node\.sh npm ci && npm start\b/m);
  assert.match(two.text, /^bash \.ci\/node\.sh npm ci && npm test\b/m);
  const ci = readFileSync(projectPath('.ci', 'run'), 'utf8');
  assert.match(ci, /bash \.ci\/node\.sh npm ci --no-audit --no-fund --loglevel=error && npm test --silent/);
});

test('a VM registers at the REST port of the settings it is shown beside, not the admin port', () => {
  const settings = parse(readFileSync(projectPath('config', 'fleetxds.yaml'), 'utf8')) as {
    rest: { listen: string };
    admin: { listen: string };
  };
  const block = commandBlocks().find((b) => b.page === 'docs/registration.md' && /fleetxds register/.test(b.text));
  assert.ok(block, 'the register example');
  const port = /--server https?:\/\/[^:\s]+:(\d+)/.exec(block.text)?.[1];
  assert.is(port, settings.rest.listen.split(':').pop());
});

test('blocks run as one session: stops at the first failure; what keeps running is started aside and waited for', () => {
  const s = sessionScript([
    {
      page: 'a.md',
      line: 3,
      text: 'mkdir -p a \\\n  b\nserve --here   # keeps running (Ctrl-C stops it)\ncurl -s x/readyz',
    },
    { page: 'a.md', line: 9, text: '# a comment\necho done\ncurl -sf y | grep -x ok   # ok (give it a moment)' },
  ]);
  assert.match(s, /^set -eo pipefail$/m);
  assert.match(s, /^__at='a\.md:4'\nmkdir -p a b$/m);
  assert.match(s, /^__at='a\.md:6'\nsetsid bash -c 'serve --here' > .* & __bg\+=\(\$!\)$/m);
  assert.match(s, /^__retry 'curl -s x\/readyz'$/m);
  assert.match(s, /^__at='a\.md:11'\necho done$/m);
  assert.match(s, /^__retry 'curl -sf y \| grep -x ok {3}# ok \(give it a moment\)'$/m);
  assert.not.match(s, /a comment/);
  const r = spawnSync('bash', ['-c', sessionScript([{ page: 'p.md', line: 1, text: 'true\nfalse\necho never' }])], {
    encoding: 'utf8',
  });
  assert.is(r.status, 1);
  assert.match(r.stderr, /failed at p\.md:3/);
  assert.not.match(r.stdout, /never/);
});

test('curl cut short by head, as in a terminal, is no failure; a curl that fails still is', async () => {
  const big = Buffer.alloc(4 << 20, 'x');
  const server = createServer((_req, res) => res.end(big));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  try {
    const session = (text: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn('bash', ['-c', sessionScript([{ page: 'p.md', line: 1, text }])]);
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.stderr.on('data', (d) => (out += d));
        child.on('close', (code) => resolve({ code, out }));
      });
    for (let i = 0; i < 5; i++) {
      const r = await session(`curl -s 127.0.0.1:${port}/ | head -c 10; echo\necho after`);
      assert.is(r.code, 0, r.out);
      assert.match(r.out, /^x{10}\nafter$/m);
    }
    const refused = await session(`curl -sf 127.0.0.1:1/ | head -c 10; echo\necho never`);
    assert.is.not(refused.code, 0, refused.out);
    assert.match(refused.out, /failed at p\.md:2/);
    assert.not.match(refused.out, /never/);
  } finally {
    server.close();
  }
});

test.run();
