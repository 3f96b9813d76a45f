/**
 * Failover by distance as the transports serve it, over real sockets: a node's locality (gRPC
 * node.locality, REST in either JSON spelling) picks its view of the group; a node that says
 * nothing, or names a place no endpoint is, gets the group's own; serving threads and a restart
 * serve the same views; a registered endpoint in a new zone makes a view of its own and is one push
 * to the streams it concerns; a locality name past the bound is refused.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { MAX_LOCALITY_NAME } from '../../src/features/locality/schema.ts';
import { connect, T, type Json } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const digest = (t: string) => createHash('sha256').update(t).digest('hex');

const TREE = {
  'services.yaml': `kind: Service
name: api
locality: { failover: true }
registration: { tokens: ["${digest('vm')}"], ttl: 1h, addresses: [10.0.0.0/8] }
endpoints:
  - { address: 10.0.1.1:80, region: r, zone: a }
  - { address: 10.0.2.1:80, region: r, zone: b }
  - { address: 10.0.3.1:80, region: far, zone: c }
---
kind: Service
name: plain
endpoints: [{ address: 10.0.9.1:80, region: r, zone: a }, { address: 10.0.9.2:80, region: far, zone: c }]
---
kind: Listener
name: main
port: 10000
virtualHosts: [main]
---
kind: VirtualHost
name: main
domains: ["*"]
routes: [{ match: { prefix: /plain }, to: plain }, { to: api }]
`,
};

/** Endpoint address -> priority, in one ClusterLoadAssignment. */
function priorities(cla: Json): Record<string, number> {
  const out: Record<string, number> = {};
  for (const l of cla.endpoints ?? [])
    for (const e of l.lb_endpoints) out[e.endpoint.address.socket_address.address] = l.priority ?? 0;
  return out;
}

/** The assignments an ADS stream of a node in `locality` is served first, by cluster. */
async function servedTo(app: RunningApp, locality?: object, id = 'n'): Promise<Record<string, Json>> {
  const c = connect(app.grpcPort, 'ads', grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  const s = c.open();
  try {
    s.send({
      node: { id, cluster: 'c', ...(locality && { locality }) },
      type_url: T.endpoint,
      resource_names: ['api', 'plain'],
    });
    const r = await s.next();
    return Object.fromEntries(r.resources.map((x: Json) => [x.cluster_name, x]));
  } finally {
    s.close();
    c.close();
  }
}

const NEAR_A = { '10.0.1.1': 0, '10.0.2.1': 1, '10.0.3.1': 2 };
const NEAR_B = { '10.0.1.1': 1, '10.0.2.1': 0, '10.0.3.1': 2 };
const IN_R = { '10.0.1.1': 0, '10.0.2.1': 0, '10.0.3.1': 1 };
const ANYWHERE = { '10.0.1.1': 0, '10.0.2.1': 0, '10.0.3.1': 0 };

async function checkViews(app: RunningApp): Promise<void> {
  assert.equal(priorities((await servedTo(app, { region: 'r', zone: 'a' })).api!), NEAR_A);
  assert.equal(priorities((await servedTo(app, { region: 'r', zone: 'b', sub_zone: 'rack' })).api!), NEAR_B);
  assert.equal(priorities((await servedTo(app, { region: 'r', zone: 'elsewhere' })).api!), IN_R, 'zone unknown');
  assert.equal(priorities((await servedTo(app)).api!), ANYWHERE, 'no locality');
  assert.equal(priorities((await servedTo(app, { region: 'moon' })).api!), ANYWHERE, 'region unknown');
  // A service without failover is the same for everyone.
  const plain = (await servedTo(app, { region: 'r', zone: 'a' })).plain!;
  assert.equal(plain, (await servedTo(app, { region: 'far', zone: 'c' })).plain);
}

test('each node is served the view of its locality; unknown or no locality gets the group view', async () => {
  const app = await startServer(writeTree(TREE));
  try {
    await checkViews(app);
  } finally {
    await app.close();
  }
});

test('serving threads serve the same views', async () => {
  const app = await startServer(writeTree(TREE), { grpc: { threads: 2 } });
  try {
    for (let i = 0; i < 3; i++) await checkViews(app);
  } finally {
    await app.close();
  }
});

test('a restart serves the same views from the stored version', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(TREE);
  await (await startServer(dir, { database: db })).close();
  const app = await startServer(dir, { database: db });
  try {
    await checkViews(app);
  } finally {
    await app.close();
  }
});

test('REST polls pick their view by node.locality, in either JSON spelling', async () => {
  const app = await startServer(writeTree(TREE), { rest: { holdMs: 0 } });
  try {
    const poll = async (locality: object) => {
      const r = await fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:endpoints`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ node: { id: 'rest-1', cluster: 'c', locality }, resource_names: ['api'] }),
      });
      assert.is(r.status, 200);
      return priorities(((await r.json()) as { resources: Json[] }).resources[0]!);
    };
    assert.equal(await poll({ region: 'r', zone: 'b' }), NEAR_B);
    assert.equal(await poll({ region: 'r', zone: 'a', subZone: 'x' }), NEAR_A);
  } finally {
    await app.close();
  }
});

test('a registered endpoint in a new zone makes its own view, and is one push to each stream', async () => {
  const app = await startServer(writeTree(TREE), { rest: {} });
  const c = connect(app.grpcPort);
  try {
    const streams = [
      { locality: { region: 'r', zone: 'd' }, s: c.open() },
      { locality: { region: 'r', zone: 'a' }, s: c.open() },
    ];
    for (const { locality, s } of streams) {
      s.send({
        node: { id: `n-${locality.zone}`, cluster: 'c', locality },
        type_url: T.endpoint,
        resource_names: ['api'],
      });
      const r = await s.next();
      s.send({ type_url: T.endpoint, version_info: r.version_info, response_nonce: r.nonce, resource_names: ['api'] });
    }
    const put = await fetch(`http://127.0.0.1:${app.restPort}/v1/services/api/endpoints/10.0.4.1%3A80`, {
      method: 'PUT',
      headers: { authorization: 'Bearer vm', 'content-type': 'application/json' },
      body: JSON.stringify({ region: 'r', zone: 'd' }),
    });
    assert.is(put.status, 200);
    const [inD, inA] = await Promise.all(streams.map(({ s }) => s.next(3000)));
    assert.equal(priorities(inD!.resources[0]), {
      ...IN_R,
      '10.0.1.1': 1,
      '10.0.2.1': 1,
      '10.0.4.1': 0,
      '10.0.3.1': 2,
    });
    assert.equal(priorities(inA!.resources[0]), { ...NEAR_A, '10.0.4.1': 1 });
    for (const { s } of streams) assert.ok(await s.quiet(300), 'one push per stream');
  } finally {
    c.close();
    await app.close();
  }
});

test(`a locality name over ${MAX_LOCALITY_NAME} characters is refused (gRPC INVALID_ARGUMENT, REST 400)`, async () => {
  const app = await startServer(writeTree(TREE), { rest: { holdMs: 0 } });
  const long = 'z'.repeat(MAX_LOCALITY_NAME + 1);
  try {
    const c = connect(app.grpcPort);
    const s = c.open();
    s.send({ node: { id: 'n', cluster: 'c', locality: { zone: long } }, type_url: T.cluster });
    const status = await s.status;
    assert.is(status.code, 3);
    assert.match(status.details, /locality/);
    c.close();
    const r = await fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:clusters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ node: { id: 'n', cluster: 'c', locality: { sub_zone: long } } }),
    });
    assert.is(r.status, 400);
    assert.equal([app.registry.connected().length, app.registry.polling().length], [0, 0]);
  } finally {
    await app.close();
  }
});

test.run();
