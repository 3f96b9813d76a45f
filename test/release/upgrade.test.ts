/**
 * Upgrades keep the data: the release of an earlier commit (PREVIOUS, packaged by the same builder
 * from a worktree of that commit) is unpacked and run; it applies a few versions, a group is pinned,
 * a staged rollout waits at its first stage and a proxy NACKs. Then it is stopped and this release
 * is unpacked beside it and started on the same settings and database: history, the pin, the
 * rollout and the NACK record are all there, and the same version is served. Going back to the
 * earlier release then refuses the database this one migrated further, with a clear message.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildRelease } from '../../src/packaging/release.ts';
import { currentRelease } from '../helpers/release-build.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { connect, T } from '../helpers/ads-client.ts';
import { freePort } from '../helpers/envoy.ts';
import { waitFor } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

/** The last commit before registrations (migration 0012): its database is one migration behind. */
const PREVIOUS = '6fecf67';

let worktree: string;
let previous: string;
let current: string;
let work: string;
let tree: string;
let ports: { grpc: number; admin: number; rest: number };
let server: ChildProcess | undefined;

function unpack(archive: string, version: string): string {
  const dir = tempDir('fleetxds-upgrade-');
  execFileSync('tar', ['-C', dir, '-xzf', archive]);
  return join(dir, `fleetxds-${version}-linux-x64`);
}

const node = (script: string, ...args: string[]) =>
  execFileSync('bash', [projectPath('.ci', 'node.sh'), ...args], { cwd: script, stdio: 'ignore', env: process.env });

function writeTreeVersion(n: number): void {
  writeFileSync(
    join(tree, 'tree.yaml'),
    `kind: Service
name: web
endpoints: [{ address: 127.0.0.1:${9000 + n} }]
---
kind: VirtualHost
name: site
domains: ["*"]
routes: [{ to: web }]
---
kind: Listener
name: web
address: 127.0.0.1
port: 10080
virtualHosts: [site]
---
kind: Rollout
name: staged
stages: [{ name: canary, select: { idPattern: "canary-*" }, gates: { minProxies: 1 } }]
`,
  );
}

async function start(release: string): Promise<void> {
  server = spawn(join(release, 'bin', 'fleetxds'), ['serve', '--config', join(work, 'fleetxds.yaml')], {
    cwd: work,
    env: { PATH: '/usr/bin:/bin' },
    stdio: 'ignore',
  });
  await waitFor(
    'the server is ready',
    async () => (await fetch(`http://127.0.0.1:${ports.admin}/readyz`).catch(() => undefined))?.status === 200,
    30_000,
  );
}

async function stop(): Promise<void> {
  const s = server!;
  server = undefined;
  await new Promise<void>((resolve) => {
    s.once('exit', () => resolve());
    s.kill('SIGTERM');
  });
}

const api = async (path: string, init?: RequestInit) =>
  (await (await fetch(`http://127.0.0.1:${ports.admin}${path}`, init)).json()) as Record<string, unknown>;

test.before(async () => {
  worktree = join(tempDir('fleetxds-previous-'), 'checkout');
  execFileSync('git', ['worktree', 'add', '--detach', worktree, PREVIOUS], { cwd: projectPath(), stdio: 'ignore' });
  node(worktree, 'npm', 'ci', '--no-audit', '--no-fund');
  node(worktree, 'npm', 'run', 'build', '--silent');
  const out = tempDir('fleetxds-upgrade-releases-');
  const prev = buildRelease(join(out, 'previous'), worktree);
  const cur = await currentRelease();
  previous = unpack(prev.archive, prev.manifest.version);
  current = unpack(cur.archive, cur.manifest.version);
  work = tempDir('fleetxds-upgrade-state-');
  tree = join(work, 'services');
  execFileSync('mkdir', ['-p', tree]);
  ports = { grpc: await freePort(), admin: await freePort(), rest: await freePort() };
  writeFileSync(
    join(work, 'fleetxds.yaml'),
    `configDir: services\ndatabase: state/fleetxds.db\ngrpc: { listen: 127.0.0.1:${ports.grpc} }\n` +
      `admin: { listen: 127.0.0.1:${ports.admin} }\nwatch: { enabled: false }\nlog: { level: warn }\n` +
      `rest: { listen: 127.0.0.1:${ports.rest} }\n`,
  );
});

test.after(async () => {
  if (server) await stop();
  if (worktree) {
    rmSync(worktree, { recursive: true, force: true });
    spawnSync('git', ['worktree', 'prune'], { cwd: projectPath() });
  }
});

test('history, pins, the rollout and NACK records survive the upgrade; the same version is served', async () => {
  writeTreeVersion(1);
  await start(previous);
  for (const n of [2, 3]) {
    writeTreeVersion(n);
    server!.kill('SIGHUP');
    await waitFor(
      `version ${n}`,
      async () => ((await api('/api/v1/versions')).versions as unknown[]).length >= n,
      20_000,
    );
  }
  await api('/api/v1/pins/default', {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ versionId: 2 }),
  });
  // A proxy NACKs the clusters it is sent.
  const c = connect(ports.grpc);
  const s = c.open();
  s.send({ node: { id: 'edge-1', cluster: 'edge' }, type_url: T.cluster });
  const r = await s.next();
  s.send({ type_url: T.cluster, response_nonce: r.nonce, error_detail: { code: 3, message: 'upgrade test NACK' } });
  await waitFor(
    'the NACK is recorded',
    async () => JSON.stringify(await api('/api/v1/nacks')).includes('upgrade test NACK'),
    10_000,
  );
  s.close();
  c.close();
  const before = {
    versions: await api('/api/v1/versions'),
    pins: await api('/api/v1/pins'),
    rollout: await api('/api/v1/rollout'),
    nacks: await api('/api/v1/nacks'),
    served: (await api('/api/v1/status')).version,
  };
  assert.ok(before.rollout && JSON.stringify(before.rollout).includes('canary'), JSON.stringify(before.rollout));
  await stop();

  await start(current);
  const after = {
    versions: await api('/api/v1/versions'),
    pins: await api('/api/v1/pins'),
    rollout: await api('/api/v1/rollout'),
    nacks: await api('/api/v1/nacks'),
    served: (await api('/api/v1/status')).version,
  };
  assert.equal(after.versions, before.versions, 'history');
  assert.equal(after.pins, before.pins, 'pins');
  // The newer release may tell more of the same rollout (fields it added); what the older told, unchanged.
  assert.equal(onlyWhatWasThere(after.rollout, before.rollout), before.rollout, 'the rollout under way');
  assert.equal(after.nacks, before.nacks, 'NACK records');
  assert.equal(after.served, before.served, 'the same version is served');
  await stop();
});

/** `value` cut to the fields `shape` has, at every depth (arrays item by item). */
function onlyWhatWasThere(value: unknown, shape: unknown): unknown {
  if (Array.isArray(shape) && Array.isArray(value)) return value.map((v, i) => onlyWhatWasThere(v, shape[i]));
  if (shape && typeof shape === 'object' && value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(shape).map((k) => [
        k,
        onlyWhatWasThere((value as Record<string, unknown>)[k], (shape as Record<string, unknown>)[k]),
      ]),
    );
  return value;
}

test('going back to the earlier release refuses the database this one migrated, saying why', () => {
  const r = spawnSync(join(previous, 'bin', 'fleetxds'), ['serve', '--config', join(work, 'fleetxds.yaml')], {
    cwd: work,
    env: { PATH: '/usr/bin:/bin' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.is.not(r.status, 0);
  // This build's newest migration, whichever it is; the earlier release knows 11.
  const newest = readdirSync(projectPath('migrations')).filter((f) => /^\d{4}_.*\.sql$/.test(f)).length;
  assert.match(
    `${r.stdout}${r.stderr}`,
    new RegExp(`database schema version ${newest} is newer than this build \\(11\\); refusing to start`),
  );
});

test.run();
