/**
 * Operator decisions reach every replica through PostgreSQL (a real server from Debian's packages,
 * started here): three replicas over one tree, each with its own SQLite, one shared decision log.
 * A rollback, a pin, an unpin and rollout commands issued to one replica are served by all; while
 * PostgreSQL is down every replica keeps serving and decisions are refused with 503, and after it
 * is back they flow again; a replica that was down applies what it missed when it starts.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, T, type Json, type ScriptedStream } from '../helpers/ads-client.ts';
import { startPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

/** The stated propagation bound (README "Several replicas"): NOTIFY makes it a round trip; the poll backs it up. */
const PROPAGATION_MS = 2000;

const ROLLOUT = `kind: Rollout
name: staged
stages:
  - name: canary
    select: { idPattern: "canary-*" }
    gates: { approval: manual }
acceptUnauthenticatedNodes: true
`;
const tree = (timeout: string, rollout = false) => ({
  ...BASE,
  'services.yaml': BASE['services.yaml']!.replace('name: api\n', `name: api\nconnectTimeout: ${timeout}\n`),
  ...(rollout ? { 'rollout.yaml': ROLLOUT } : {}),
});

let pg: TestPostgres;
let dir: string;
let databases: string[];
let replicas: RunningApp[];

const start = (i: number, notReadyWhileUnknown?: boolean) =>
  startServer(dir, {
    database: databases[i],
    replica: {
      name: `r${i + 1}`,
      postgres: {
        url: pg.url,
        pollMs: 500,
        queryTimeoutMs: 1000,
        ...(notReadyWhileUnknown && { notReadyWhileUnknown }),
      },
    },
  });

test.before(async () => {
  try {
    pg = await startPostgres();
    dir = writeTree(BASE);
    const base = tempDir();
    databases = [0, 1, 2].map((i) => join(base, `r${i + 1}.db`));
    replicas = [await start(0), await start(1), await start(2)];
  } catch (err) {
    reportSetupFailure(err);
  }
});
test.after(async () => {
  for (const r of replicas ?? []) await r.close();
  await pg?.close();
});

const admin = async (r: RunningApp, method: string, path: string, body?: object) => {
  const res = await fetch(`http://127.0.0.1:${r.adminPort}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: (await res.json()) as Json };
};

/** Every replica reads the directory (the deploy hook fans a push out to them). */
async function push(timeout: string, rollout = false): Promise<number[]> {
  writeTree(tree(timeout, rollout), dir);
  if (!rollout) rmSync(join(dir, 'rollout.yaml'), { force: true });
  const out = (await Promise.all(replicas.map((r) => r.reload()))) as { status: string; versionId: number }[];
  for (const o of out) assert.is(o.status, 'applied');
  return out.map((o) => o.versionId);
}

const timeoutOf = (cds: Json) => cds.resources.find((r: Json) => r.name === 'api')?.connect_timeout;

/** A proxy on each replica, subscribed to CDS, ACKing every response. */
async function proxies(id: string): Promise<{ streams: ScriptedStream[]; close(): void; first: Json[] }> {
  const clients = replicas.map((r) => connect(r.grpcPort));
  const streams = clients.map((c) => c.open());
  const first: Json[] = [];
  for (const [i, s] of streams.entries()) {
    s.send({ node: { id: `${id}-${i}`, cluster: 'c' }, type_url: T.cluster });
    const cds = await s.next();
    s.send({ type_url: T.cluster, version_info: cds.version_info, response_nonce: cds.nonce });
    first.push(cds);
  }
  return { streams, first, close: () => clients.forEach((c) => c.close()) };
}

/** Waits for the next CDS response on every stream; the time until the last one arrived. */
async function allReceive(streams: ScriptedStream[], since: number): Promise<{ ms: number; cds: Json[] }> {
  const cds = await Promise.all(
    streams.map(async (s) => {
      const r = await s.next(PROPAGATION_MS + 3000);
      s.send({ type_url: T.cluster, version_info: r.version_info, response_nonce: r.nonce });
      return { r, at: performance.now() };
    }),
  );
  return { ms: Math.max(...cds.map((c) => c.at)) - since, cds: cds.map((c) => c.r) };
}

test('a rollback issued to one replica is served by all three within the stated time', async () => {
  const [v1] = await push('1s');
  await push('2s');
  const p = await proxies('rb');
  assert.equal(p.first.map(timeoutOf), ['2s', '2s', '2s']);
  const t0 = performance.now();
  const res = await admin(replicas[0]!, 'POST', '/api/v1/rollback', { versionId: v1, actor: 'alice' });
  assert.is(res.status, 200);
  assert.is(res.json.status, 'applied');
  const got = await allReceive(p.streams, t0);
  console.log(`  rollback on r1 served by all three replicas in ${Math.round(got.ms)} ms`);
  assert.ok(got.ms < PROPAGATION_MS, `within ${PROPAGATION_MS} ms (took ${Math.round(got.ms)})`);
  assert.equal(got.cds.map(timeoutOf), ['1s', '1s', '1s']);
  assert.is(new Set(got.cds.map((c) => c.version_info)).size, 1, 'the same version everywhere');
  // Each replica recorded it in its own history and audit, naming who decided.
  for (const r of replicas) {
    const audit = (await admin(r, 'GET', '/api/v1/audit')).json.audit as Json[];
    assert.ok(audit.some((a) => a.action === 'rollback' && a.actor === 'alice'));
    assert.is(r.stores.revisions.latest()!.sourceKind, 'rollback');
  }
  // The reverted tree is still in the directory: reading it again does not undo the rollback.
  for (const r of replicas) assert.is(((await r.reload()) as { status: string }).status, 'unchanged');
  assert.ok(await p.streams[1]!.quiet(300));
  p.close();
});

test('a pin made on r2 and an unpin made on r3 reach every replica', async () => {
  // Version ids are each replica's own (r1 has a rollback row the others got later, in another order):
  // the operator names r2's id of the 3s version on r2.
  const v3 = await push('3s');
  const p = await proxies('pin');
  await push('4s');
  await allReceive(p.streams, performance.now());
  const t0 = performance.now();
  const pinned = await admin(replicas[1]!, 'PUT', '/api/v1/pins/default', { versionId: v3[1], actor: 'bob' });
  assert.is(pinned.status, 200);
  const got = await allReceive(p.streams, t0);
  assert.equal(got.cds.map(timeoutOf), ['3s', '3s', '3s']);
  for (const r of replicas) assert.equal((await admin(r, 'GET', '/api/v1/pins')).json.pins.length, 1);
  const t1 = performance.now();
  assert.is((await admin(replicas[2]!, 'DELETE', '/api/v1/pins/default')).status, 200);
  const back = await allReceive(p.streams, t1);
  assert.equal(back.cds.map(timeoutOf), ['4s', '4s', '4s']);
  console.log(`  pin on r2: ${Math.round(got.ms)} ms, unpin on r3: ${Math.round(back.ms)} ms to all three`);
  assert.ok(got.ms < PROPAGATION_MS && back.ms < PROPAGATION_MS);
  p.close();
});

test('rollout commands: promote on r1 and abort on r3 are applied by every replica', async () => {
  await push('5s', true);
  const p = await proxies('rollout'); // not canaries: they wait for the promotion
  await push('6s', true);
  assert.ok(await p.streams[0]!.quiet(300), 'no canary approved yet: the rest keeps 5s');
  for (const r of replicas) assert.is((await admin(r, 'GET', '/api/v1/rollout')).json.rollout.stage, 'canary');
  const t0 = performance.now();
  assert.is((await admin(replicas[0]!, 'POST', '/api/v1/rollout/promote', { actor: 'carol' })).status, 200);
  const promoted = await allReceive(p.streams, t0);
  assert.equal(promoted.cds.map(timeoutOf), ['6s', '6s', '6s'], 'the last stage passed: everyone has it');
  for (const r of replicas) assert.is((await admin(r, 'GET', '/api/v1/rollout')).json.last.status, 'complete');

  await push('7s', true);
  await admin(replicas[1]!, 'POST', '/api/v1/rollout/halt');
  await waitFor('halted everywhere', async () => {
    const all = await Promise.all(replicas.map((r) => admin(r, 'GET', '/api/v1/rollout')));
    return all.every((a) => a.json.rollout?.status === 'halted');
  });
  assert.is((await admin(replicas[2]!, 'POST', '/api/v1/rollout/abort')).status, 200);
  await waitFor('aborted everywhere', async () => {
    const all = await Promise.all(replicas.map((r) => admin(r, 'GET', '/api/v1/rollout')));
    return all.every((a) => a.json.rollout === null && a.json.last?.status === 'aborted');
  });
  assert.ok(await p.streams[2]!.quiet(300), 'the rest never left 6s');
  p.close();
});

/** A canary on replica `r` that gets the version with `timeout` and NACKs it with `message`. */
async function canaryNacks(r: RunningApp, id: string, timeout: string, message: string): Promise<() => void> {
  const c = connect(r.grpcPort);
  const s = c.open();
  s.send({ node: { id, cluster: 'c' }, type_url: T.cluster });
  const cds = await s.next();
  assert.is(timeoutOf(cds), timeout, 'the canary has the new version');
  s.send({ type_url: T.cluster, response_nonce: cds.nonce, error_detail: { code: 13, message } });
  return () => c.close();
}

/** PostgreSQL stopped, and every replica has noticed. */
async function outage(): Promise<void> {
  await pg.stop();
  await waitFor('replicas see the store gone', async () => replicas.every((r) => connected(r) === false));
}

/** PostgreSQL back, and every replica reconnected. */
async function recovery(): Promise<void> {
  await pg.start();
  await waitFor('reconnected', async () => replicas.every((r) => connected(r) === true), 10_000);
}

test('a canary NACK on r2 halts the rollout on every replica (an automatic transition is shared too)', async () => {
  await push('5.5s', true);
  await push('6.5s', true);
  const close = await canaryNacks(replicas[1]!, 'canary-1', '6.5s', 'cluster api: refused by the canary');
  await waitFor('halted everywhere by the NACK', async () => {
    const all = await Promise.all(replicas.map((r) => admin(r, 'GET', '/api/v1/rollout')));
    return all.every(
      (a) => a.json.rollout?.status === 'halted' && /refused by the canary/.test(a.json.rollout?.halt?.message),
    );
  });
  const metrics = await (await fetch(`http://127.0.0.1:${replicas[2]!.adminPort}/metrics`)).text();
  assert.match(metrics, /^fleetxds_rollout_halted\{replica="r3"\} 1$/m);
  assert.match(metrics, /^fleetxds_shared_store_up\{replica="r3"\} 1$/m);
  assert.match(metrics, /^fleetxds_shared_decisions_behind\{replica="r3"\} 0$/m);
  await admin(replicas[0]!, 'POST', '/api/v1/rollout/abort');
  close();
});

test('PostgreSQL down: every replica keeps serving, decisions are refused; back: they flow again', async () => {
  const v8 = await push('8s');
  await push('9s');
  const p = await proxies('outage');
  await outage();
  const refused = await admin(replicas[0]!, 'POST', '/api/v1/rollback', { versionId: v8[0] });
  assert.is(refused.status, 503);
  assert.is(refused.json.code, 'FXDS_SHARED_UNAVAILABLE');
  // Serving goes on: a proxy connecting now is answered, and a push still reaches it.
  const late = await proxies('outage-late');
  assert.equal(late.first.map(timeoutOf), ['9s', '9s', '9s']);
  await push('10s');
  assert.equal((await allReceive(late.streams, performance.now())).cds.map(timeoutOf), ['10s', '10s', '10s']);
  const status = await admin(replicas[1]!, 'GET', '/api/v1/status');
  assert.is(status.json.sharedDecisions.connected, false);
  assert.ok(status.json.sharedDecisions.lastError);
  late.close();

  await recovery();
  await allReceive(p.streams, performance.now()); // the 10s push
  const t0 = performance.now();
  assert.is((await admin(replicas[2]!, 'POST', '/api/v1/rollback', { versionId: v8[2] })).json.status, 'applied');
  const got = await allReceive(p.streams, t0);
  assert.equal(got.cds.map(timeoutOf), ['8s', '8s', '8s']);
  p.close();
});

test('PostgreSQL down: a canary NACK still halts the rollout on the replica that saw it', async () => {
  await push('13s', true);
  await outage();
  await push('14s', true);
  const close = await canaryNacks(replicas[1]!, 'canary-2', '14s', 'cluster api: refused during the outage');
  // The NACK cannot be shared, so it is not lost either: the replica that saw it stops the rollout.
  await waitFor('halted on r2', async () => {
    const r2 = (await admin(replicas[1]!, 'GET', '/api/v1/rollout')).json.rollout;
    return r2?.status === 'halted' && /refused during the outage/.test(r2.halt?.message);
  });
  for (const i of [0, 2])
    assert.is((await admin(replicas[i]!, 'GET', '/api/v1/rollout')).json.rollout.status, 'progressing');
  close();
  await recovery();
  for (const r of replicas) await admin(r, 'POST', '/api/v1/rollout/abort');
});

test('a replica that was down applies the decisions it missed when it starts, before serving', async () => {
  const [v11] = await push('11s');
  await push('12s');
  await replicas[2]!.close();
  assert.is((await admin(replicas[0]!, 'POST', '/api/v1/rollback', { versionId: v11 })).json.status, 'applied');
  replicas[2] = await start(2);
  const c = connect(replicas[2].grpcPort);
  const s = c.open();
  s.send({ node: { id: 'came-back', cluster: 'c' }, type_url: T.cluster });
  assert.is(timeoutOf(await s.next()), '11s', 'the rollback made while it was down');
  c.close();
});

test('A, B, A, then one replica down, B, and a rollback to A: the replica that comes back serves A too', async () => {
  const [a] = await push('21s');
  await push('22s');
  await push('21s');
  await replicas[2]!.close();
  // Only r1 and r2 read the tree while r3 is down.
  writeTree(tree('22s'), dir);
  for (const r of replicas.slice(0, 2)) assert.is(((await r.reload()) as { status: string }).status, 'applied');
  const back = await admin(replicas[1]!, 'POST', '/api/v1/rollback', { versionId: a });
  assert.is(back.json.status, 'applied');
  replicas[2] = await start(2);
  for (const [i, r] of replicas.entries()) {
    const c = connect(r.grpcPort);
    const s = c.open();
    s.send({ node: { id: `aba-${i}`, cluster: 'c' }, type_url: T.cluster });
    assert.is(timeoutOf(await s.next()), '21s', `r${i + 1} serves the version the rollback named`);
    c.close();
  }
  const behind = (await admin(replicas[2], 'GET', '/api/v1/status')).json;
  assert.equal(behind.sharedDecisions?.unapplied ?? [], [], 'r3 applied the shared rollback');
});

test('a replica started while PostgreSQL is down serves what it applied last and says it cannot know; back: it catches up', async () => {
  const [v] = await push('14s');
  assert.is((await admin(replicas[0]!, 'PUT', '/api/v1/pins/default', { versionId: v })).status, 200);
  await waitFor('pinned everywhere', () => replicas.every((r) => r.stores.pins.list().length === 1), PROPAGATION_MS);
  await replicas[2]!.close();
  assert.is((await admin(replicas[0]!, 'DELETE', '/api/v1/pins/default')).status, 200);
  await pg.stop();
  replicas[2] = await start(2, true);
  const r3 = replicas[2];
  // The documented choice: it serves the decisions it applied last (the pin the others removed) ...
  assert.is(r3.stores.pins.list().length, 1, 'still pinned here: it cannot read the unpin');
  // ... and says it cannot know how far behind that is.
  const status = await admin(r3, 'GET', '/api/v1/status');
  assert.is(status.json.sharedDecisions.behind, null);
  assert.is(status.json.sharedDecisions.connected, false);
  const metrics = await (await fetch(`http://127.0.0.1:${r3.adminPort}/metrics`)).text();
  assert.match(metrics, /^fleetxds_shared_decisions_behind(\{[^}]*\})? -1$/m);
  const ready = await fetch(`http://127.0.0.1:${r3.adminPort}/readyz`);
  assert.is(ready.status, 503, 'not ready, as configured');
  assert.match(
    ((await ready.json()) as { reason: string }).reason,
    /cannot know whether operator decisions were missed/,
  );
  // r1 (without the setting) stays ready while the store is down.
  assert.is((await fetch(`http://127.0.0.1:${replicas[0]!.adminPort}/readyz`)).status, 200);
  await pg.start();
  await waitFor('caught up', () => r3.sharedDecisions()?.behind === 0, 15_000);
  assert.equal(r3.stores.pins.list(), [], 'the unpin applied once it could be read');
  assert.is((await fetch(`http://127.0.0.1:${r3.adminPort}/readyz`)).status, 200);
  await waitFor('every replica connected', () => replicas.every((r) => connected(r)), 15_000);
});

const connected = (r: RunningApp) => r.sharedDecisions()?.connected;

test.run();
