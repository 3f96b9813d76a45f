/**
 * Endpoints that register at run time, through real Envoy 1.40 and 1.36, with the `fleetxds
 * register` command as it runs on a VM (a process per endpoint, heartbeating every 300 ms):
 *  - a registered endpoint gets traffic within 1 s of its registration;
 *  - one whose command is killed (no more heartbeats) gets none within TTL + 1 s;
 *  - one whose command is stopped drains: under a steady request stream nothing fails, and it gets
 *    no new requests after the drain time;
 *  - a registration with a token the service does not list gets 403, counted in a metric and kept
 *    out of the audit log (which keeps operators' decisions);
 *  - a restart of fleetxds (same database) keeps a live endpoint in every proxy's rotation.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure, startHttpBackend, type Backend } from '../helpers/envoy-lab.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { fleetxdsArgs, waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const TOKEN = 'registration-token-for-the-app-service';
let app: RunningApp;
let dir: string;
let database: string;
let grpcListen: string;
const backends: Record<string, Backend> = {};

const envoys: EnvoyProcess[] = [];
const ports = new Map<EnvoyVersion, number>();
const running: Registrar[] = [];

/** Which backend answered each of `n` requests through a release's Envoy. */
async function tally(v: EnvoyVersion, n = 20): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: ports.get(v)!, path: '/', agent: false }, (res) => {
          let b = '';
          res.setEncoding('utf8').on('data', (d: string) => (b += d));
          res.on('error', reject);
          res.on('end', () => resolve(res.statusCode === 200 ? b : `status ${res.statusCode}`));
        })
        .on('error', reject);
    });
    out[body] = (out[body] ?? 0) + 1;
  }
  return out;
}

const servedBy = (t: Record<string, number>) => Object.keys(t);

interface Registrar {
  output(): string;
  kill(signal: NodeJS.Signals): void;
}

/** `fleetxds register` for a backend, as a process of its own, with its output kept. */
function register(name: string, token = TOKEN): Registrar {
  const tokenFile = writeTree({ token });
  const child = spawn(process.execPath, [
    ...fleetxdsArgs(),
    'register',
    '--service',
    'app',
    '--address',
    `127.0.0.1:${backends[name]!.port}`,
    '--server',
    `http://127.0.0.1:${app.restPort}`,
    '--token-file',
    `${tokenFile}/token`,
    '--interval',
    '300ms',
    '--check',
    'tcp',
  ]);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const r = { output: () => out, kill: (signal: NodeJS.Signals) => void child.kill(signal) };
  running.push(r);
  return r;
}

async function start(): Promise<void> {
  app = await startServer(dir, { database, grpcListen, rest: {} });
}

test.before(async () => {
  try {
    for (const n of ['static', 'r1', 'r2', 'r3']) backends[n] = await startHttpBackend(n);
    grpcListen = `127.0.0.1:${await freePort()}`;
    database = `${tempDir()}/fleetxds.db`;
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    const digest = createHash('sha256').update(TOKEN).digest('hex');
    dir = writeTree({
      'tree.yaml': [
        `kind: Service
name: app
endpoints: [{ address: 127.0.0.1:${backends.static!.port} }]
registration: { tokens: ["${digest}"], addresses: [127.0.0.0/8], ttl: 2s, drain: 2s }
`,
        'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ to: app }]\n',
        ...releases.docs,
      ].join('---\n'),
    });
    await start();
    envoys.push(...(await startEnvoys(app, (v) => tally(v, 1).then((t) => !Object.keys(t)[0]!.startsWith('status')))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  for (const p of running) p.kill('SIGKILL');
  await stopAll(envoys, app);
  for (const b of Object.values(backends)) b.server.close();
});

test('a registered endpoint gets traffic within 1 s of its registration', async () => {
  const p = register('r1');
  await waitFor('registered', async () => /registered .* healthy/.test(p.output()), 20_000, 20);
  const t0 = Date.now();
  for (const v of ENVOY_VERSIONS)
    await waitFor(`Envoy ${v} sends to r1`, async () => servedBy(await tally(v, 10)).includes('r1'), 5_000, 20);
  const ms = Date.now() - t0;
  console.log(`  registered endpoint in both Envoys' rotation after ${ms} ms`);
  assert.ok(ms <= 1000, `${ms} ms`);
  // The status API lists it, with its state and identity (the token's digest prefix).
  const status = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as {
    registrations: { service: string; address: string; state: string; identity: string }[];
  };
  const r1 = status.registrations.find((r) => r.address === `127.0.0.1:${backends.r1!.port}`);
  assert.is(r1?.state, 'healthy');
  assert.match(r1!.identity, /^token:[0-9a-f]{12}$/);
});

test('an endpoint whose command is killed is out of rotation within TTL + 1 s, in both Envoys', async () => {
  const p = register('r2');
  for (const v of ENVOY_VERSIONS)
    await waitFor(`Envoy ${v} sends to r2`, async () => servedBy(await tally(v, 10)).includes('r2'), 10_000, 50);
  const address = `127.0.0.1:${backends.r2!.port}`;
  const healthy = async () => {
    const status = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as {
      registrations: { address: string; state: string }[];
    };
    return status.registrations.some((r) => r.address === address && r.state === 'healthy');
  };
  p.kill('SIGKILL');
  const t0 = Date.now();
  // Silent for its TTL, it is no longer healthy (unhealthy, then gone after twice the TTL): read
  // from the server cheaply, so what a busy machine adds to a tally of requests is not in it.
  await waitFor('r2 no longer healthy', async () => !(await healthy()), 10_000, 20);
  const removedMs = Date.now() - t0;
  for (const v of ENVOY_VERSIONS)
    await waitFor(
      `Envoy ${v} stops sending to r2`,
      async () => !servedBy(await tally(v, 20)).includes('r2'),
      10_000,
      50,
    );
  console.log(
    `  killed endpoint unhealthy after ${removedMs} ms (TTL 2 s), out of both Envoys' rotation after ${Date.now() - t0} ms`,
  );
  assert.ok(removedMs <= 3000, `${removedMs} ms`);
});

test('a stopped command drains its endpoint: no request fails, and none reaches it after the drain time', async () => {
  const p = register('r3');
  for (const v of ENVOY_VERSIONS)
    await waitFor(`Envoy ${v} sends to r3`, async () => servedBy(await tally(v, 10)).includes('r3'), 10_000, 50);
  let failed = 0;
  let sent = 0;
  let loading = true;
  const load = (async () => {
    while (loading)
      for (const v of ENVOY_VERSIONS) {
        const t = await tally(v, 5);
        sent += 5;
        failed += Object.entries(t)
          .filter(([k]) => k.startsWith('status'))
          .reduce((a, [, n]) => a + n, 0);
      }
  })();
  let before: number | undefined;
  try {
    p.kill('SIGTERM');
    await waitFor('drain asked', async () => /draining/.test(p.output()), 10_000, 20);
    await new Promise((r) => setTimeout(r, 2500));
    before = backends.r3!.hits;
    await new Promise((r) => setTimeout(r, 1500));
  } finally {
    loading = false;
    await load;
  }
  assert.is(failed, 0, `${failed} of ${sent} failed`);
  assert.is(backends.r3!.hits, before, `no request reached r3 after the drain time: ${p.output()}`);
  assert.ok(sent > 100, `${sent} requests`);
});

test('a token the service does not list gets 403, counted and not audited', async () => {
  const p = register('r3', 'some-other-token');
  await waitFor('refused', async () => /refused \(403\)/.test(p.output()), 20_000, 50);
  assert.is(app.stores.audit.list(100).filter((r) => r.action === 'register-refused').length, 0);
  const metrics = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
  assert.match(metrics, /fleetxds_registration_refusals_total\{action="register",reason="unauthenticated"\} [1-9]/);
});

test('a restart of fleetxds keeps a live endpoint in every rotation', async () => {
  // r1's command still heartbeats.
  await app.close();
  await start();
  for (const v of ENVOY_VERSIONS) {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) for (const n of servedBy(await tally(v, 10))) seen.add(n);
    assert.ok(seen.has('r1'), `Envoy ${v}: ${[...seen].join(', ')}`);
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
