/**
 * Every `<!-- run: checkout -->` block of the docs runs as written, from the project root as a
 * newcomer pastes it (test/helpers/doc-blocks.ts), each block in a session of its own. A block
 * marked `beside npm start` runs while `npm start` serves the bundled example. Nothing here takes
 * the README's ports: 18000, 18001, 18002 and Envoy's 9901 in a block become free ports, given to
 * the server and every command as the settings' environment overrides, and the database and
 * rendered files go to a scratch folder; Envoy (test/envoy/install.sh) is on the PATH. What a block
 * leaves in the checkout (my-tree/, envoy.json: what the block names) is removed afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';
import { sessionScript, sessionsOf, type DocBlock } from '../helpers/doc-blocks.ts';
import { envoyBinary, freePort } from '../helpers/envoy.ts';
import { waitFor } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

const blocks = sessionsOf((b) => b.marker !== undefined && 'run' in b.marker && b.marker.run === 'checkout').flatMap(
  (s) => s.blocks,
);

function run(cmd: string, env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  const child = spawn('bash', ['-c', cmd], {
    cwd: projectPath(),
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return { child, output: () => out };
}

const finished = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve(child.exitCode) : child.once('close', resolve),
  );

async function runBlock(block: DocBlock): Promise<string> {
  const [grpc, admin, rest, envoyAdmin] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const ports: Record<string, number> = { 18000: grpc, 18001: admin, 18002: rest, 9901: envoyAdmin };
  const text = block.text.replace(/\b(18000|18001|18002|9901)\b/g, (p) => String(ports[p]));
  const scratch = tempDir('fleetxds-docs-');
  const env = {
    ...process.env,
    FLEETXDS_GRPC_LISTEN: `127.0.0.1:${grpc}`,
    FLEETXDS_ADMIN_LISTEN: `127.0.0.1:${admin}`,
    FLEETXDS_REST_LISTEN: `127.0.0.1:${rest}`,
    FLEETXDS_DATABASE: join(scratch, 'fleetxds.db'),
    FLEETXDS_FILES_DIR: join(scratch, 'envoy-files'),
    PATH: `${dirname(envoyBinary('1.40'))}:${process.env.PATH}`,
    TMPDIR: scratch,
  };
  const before = new Set(readdirSync(projectPath()));
  let server: ReturnType<typeof run> | undefined;
  try {
    if (block.marker && 'besideNpmStart' in block.marker && block.marker.besideNpmStart) {
      server = run('npm start', env);
      await waitFor(
        'npm start serving the example',
        async () => (await fetch(`http://127.0.0.1:${admin}/readyz`).catch(() => undefined))?.status === 200,
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${server!.output()}`);
      });
    }
    const session = run(sessionScript([{ ...block, text }]), env);
    const status = await finished(session.child);
    assert.is(status, 0, `${block.page}:${block.line}:\n${session.output()}`);
    return session.output();
  } finally {
    if (server) {
      process.kill(-server.child.pid!, 'SIGTERM');
      await finished(server.child);
    }
    // What the block made (named in it; SQLite's -wal and -shm beside a database): other tests run meanwhile.
    for (const f of readdirSync(projectPath()))
      if (!before.has(f) && text.includes(f.replace(/-(wal|shm)$/, '')))
        rmSync(projectPath(f), { recursive: true, force: true });
  }
}

const outputs = new Map<string, string>();

test('the runner has the blocks the docs mark for a checkout', () => {
  const at = blocks.map((b) => `${b.page}`);
  assert.ok(at.filter((p) => p === 'README.md').length >= 2, at.join(', '));
  assert.ok(at.includes('docs/serving.md'), at.join(', '));
});

for (const block of blocks)
  test(`${block.page}:${block.line} runs as written`, async () => {
    outputs.set(`${block.page}:${block.line}`, await runBlock(block));
  });

test('what the commands print is what the docs promise', () => {
  const all = [...outputs.values()].join('\n');
  assert.match(all, /"versionId"/, 'Look around: the config');
  assert.match(all, /^node edge-1: group edge/m, 'Look around: explain');
  assert.match(all, /: valid\b/, 'validate');
  assert.match(all, /\{"ready":true,"versionId":1\}/, 'the first tree is served');
  assert.match(all, /^LIVE$/m, 'Envoy bootstrapped by the docs is live');
  assert.match(all, /^4$/m, 'the files bootstrap names its four files');
});

test.run();
