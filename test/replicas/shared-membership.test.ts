/**
 * Two replicas sharing PostgreSQL serve the same membership: an endpoint that registers with one
 * replica (and only ever heartbeats to it) is in the EDS of both, healthy; one drained on the
 * other replica drains on both; one whose heartbeats stop leaves both after its TTL. Each replica
 * has its own SQLite database.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { startPostgres, type TestPostgres } from '../helpers/postgres.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const TOKEN = 'shared-membership-token';
let pgServer: TestPostgres;
let replicas: RunningApp[];

/** What a replica serves for the service: address -> health_status. */
function served(r: RunningApp): Record<string, string> {
  const cla = r.cache.current?.groups.get('default')?.types.endpoint.resources.get('app')?.json as
    | {
        endpoints?: {
          lb_endpoints: {
            endpoint: { address: { socket_address: { address: string; port_value: number } } };
            health_status?: string;
          }[];
        }[];
      }
    | undefined;
  const out: Record<string, string> = {};
  for (const l of cla?.endpoints ?? [])
    for (const e of l.lb_endpoints) {
      const a = e.endpoint.address.socket_address;
      out[`${a.address}:${a.port_value}`] = e.health_status ?? 'UNKNOWN';
    }
  return out;
}

async function call(r: RunningApp, method: string, address: string, suffix = ''): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${r.restPort}/v1/services/app/endpoints/${address}${suffix}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(method === 'PUT' && { 'content-type': 'application/json' }) },
    ...(method === 'PUT' && { body: '{}' }),
  });
  return res.status;
}

test.before(async () => {
  try {
    pgServer = await startPostgres();
    const digest = createHash('sha256').update(TOKEN).digest('hex');
    const dir = writeTree({
      'tree.yaml': `kind: Service
name: app
endpoints: [{ address: 10.0.0.1:80 }]
registration: { tokens: ["${digest}"], ttl: 2s, drain: 1s }
---
kind: VirtualHost
name: site
domains: ["*"]
routes: [{ to: app }]
---
kind: Listener
name: l
port: 10000
virtualHosts: [site]
`,
    });
    const base = tempDir();
    replicas = [];
    for (const i of [0, 1])
      replicas.push(
        await startServer(dir, {
          database: join(base, `r${i}.db`),
          rest: {},
          replica: { name: `r${i}`, postgres: { url: pgServer.url, pollMs: 500, queryTimeoutMs: 1000 } },
        }),
      );
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  for (const r of replicas ?? []) await r.close();
  await pgServer?.close();
});

test('an endpoint heartbeating to one replica is served healthy by both', async () => {
  const [a, b] = replicas as [RunningApp, RunningApp];
  const beat = setInterval(() => void call(a, 'PUT', '10.0.0.2:80'), 300);
  try {
    assert.is(await call(a, 'PUT', '10.0.0.2:80'), 200);
    await waitFor('replica b serves it', async () => served(b)['10.0.0.2:80'] === 'HEALTHY', 10_000, 50);
    // Longer than its TTL: b keeps it healthy from a's heartbeats alone.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(served(b), { '10.0.0.1:80': 'UNKNOWN', '10.0.0.2:80': 'HEALTHY' });
    assert.equal(served(a), served(b));
  } finally {
    clearInterval(beat);
  }
});

test('a drain asked of the other replica drains it on both; silence removes it from both', async () => {
  const [a, b] = replicas as [RunningApp, RunningApp];
  assert.is(await call(a, 'PUT', '10.0.0.3:80'), 200);
  await waitFor(
    'both serve 10.0.0.3',
    async () => replicas.every((r) => r.cache.current && served(r)['10.0.0.3:80'] === 'HEALTHY'),
    10_000,
    50,
  );
  assert.is(await call(b, 'POST', '10.0.0.3:80', '/drain'), 200);
  await waitFor(
    'both drain it',
    async () => served(a)['10.0.0.3:80'] === 'DRAINING' || served(a)['10.0.0.3:80'] === undefined,
    10_000,
    50,
  );
  await waitFor(
    'both remove the drained and the silent ones',
    async () => replicas.every((r) => Object.keys(served(r)).join() === '10.0.0.1:80'),
    15_000,
    100,
  );
});

test('a drain is answered once the other replicas can read it', async () => {
  const [a, b] = replicas as [RunningApp, RunningApp];
  assert.is(await call(a, 'PUT', '10.0.0.4:80'), 200);
  await waitFor('b serves 10.0.0.4', async () => served(b)['10.0.0.4:80'] === 'HEALTHY', 10_000, 50);
  const c = new pg.Client({ connectionString: pgServer.url });
  await c.connect();
  try {
    assert.is(await call(a, 'POST', '10.0.0.4:80', '/drain'), 200);
    // Read at once, as a replica would after this one was killed right after answering.
    const { rows } = await c.query<{ entry: { health: string } }>(
      "SELECT entry FROM fleetxds_registrations WHERE address = '10.0.0.4:80'",
    );
    assert.is(rows[0]?.entry.health, 'draining');
  } finally {
    await c.end();
  }
});

test.run();
