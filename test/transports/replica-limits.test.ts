/**
 * What keeps streams balanced across replicas: a per-replica stream limit (RESOURCE_EXHAUSTED
 * above it, so proxies retry elsewhere) and a maximum connection age with jitter (GOAWAY, then the
 * streams end after the grace period, spread over time rather than all at once).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as grpc from '@grpc/grpc-js';
import { connect, T } from '../helpers/ads-client.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('above grpc.maxStreams new streams are refused with RESOURCE_EXHAUSTED; a freed slot is taken again', async () => {
  const app = await startServer(writeTree(BASE), { grpc: { maxStreams: 2 } });
  const client = connect(app.grpcPort);
  try {
    const open = (id: string) => {
      const s = client.open();
      s.send({ node: { id, cluster: 'c' }, type_url: T.cluster });
      return s;
    };
    const a = open('a');
    const b = open('b');
    await a.next();
    await b.next();
    const c = open('c');
    const st = await c.status;
    assert.is(st.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(st.details, /maximum of 2 streams/);
    a.close();
    await a.status;
    await waitFor('the slot freed', () => app.registry.connected().length === 1, 10_000, 10);
    const d = open('d');
    assert.ok((await d.next()).resources.length > 0, 'a freed slot serves again');
    b.close();
    d.close();
  } finally {
    client.close();
    await app.close();
  }
});

test('grpc.maxConnectionAgeMs: connections are asked to go away with jitter; their streams end after the grace', async () => {
  const app = await startServer(writeTree(BASE), { grpc: { maxConnectionAgeMs: 1000, maxConnectionAgeGraceMs: 200 } });
  // Each client on a connection of its own (grpc-js shares one per target by default).
  const clients = Array.from({ length: 12 }, () =>
    connect(app.grpcPort, 'ads', grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
  );
  try {
    const t0 = Date.now();
    const ends = await Promise.all(
      clients.map(async (c, i) => {
        const s = c.open();
        s.send({ node: { id: `aged-${i}`, cluster: 'c' }, type_url: T.cluster });
        await s.next();
        await s.status;
        return Date.now() - t0;
      }),
    );
    for (const ms of ends)
      assert.ok(ms >= 850 && ms < 2500, `a stream ended after ${ms} ms (age 1 s ±10%, grace 0.2 s)`);
    assert.ok(Math.max(...ends) - Math.min(...ends) >= 40, `spread over time: ${ends.join(', ')} ms`);
    // The client reconnects and is served again.
    const again = clients[0]!.open();
    again.send({ node: { id: 'aged-again', cluster: 'c' }, type_url: T.cluster });
    assert.ok((await again.next()).resources.length > 0);
    again.close();
  } finally {
    for (const c of clients) c.close();
    await app.close();
  }
});

test.run();
