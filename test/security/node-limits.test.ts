/**
 * What clients claim about themselves is bounded: huge node ids or metadata are refused on gRPC
 * and REST, REST nodes that stop polling leave the status, and the node API is paged.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_NODE_ID } from '../../src/security/node-limits.ts';
import { connect, T } from '../helpers/ads-client.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('a 100 KB node id or 1 MB of metadata is refused (gRPC INVALID_ARGUMENT, REST 400) and not kept', async () => {
  const app = await startServer(writeTree(BASE), { rest: { holdMs: 0 } });
  try {
    const c = connect(app.grpcPort);
    const s = c.open();
    s.send({ node: { id: 'n'.repeat(100_000), cluster: 'c' }, type_url: T.cluster });
    const status = await s.status;
    assert.is(status.code, 3);
    assert.match(status.details, new RegExp(`at most ${MAX_NODE_ID}`));
    c.close();
    const post = (node: object) =>
      fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:clusters`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ node }),
      });
    assert.is((await post({ id: 'n'.repeat(100_000), cluster: 'c' })).status, 400);
    assert.is((await post({ id: 'ok', cluster: 'c', metadata: { pad: 'x'.repeat(1_000_000) } })).status, 400);
    assert.equal([app.registry.connected().length, app.registry.polling().length], [0, 0]);
  } finally {
    await app.close();
  }
});

test('REST nodes that stop polling leave the status; /api/v1/nodes is paged', async () => {
  const app = await startServer(writeTree(BASE), { rest: { holdMs: 0, pollerExpiryMs: 400 } });
  try {
    const post = (id: string) =>
      fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:clusters`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ node: { id, cluster: 'c' } }),
      });
    for (const id of ['a', 'b', 'c']) assert.is((await post(id)).status, 200);
    const page = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/nodes?limit=2`)).json()) as {
      polling: unknown[];
      total: { polling: number };
    };
    assert.equal([page.polling.length, page.total.polling], [2, 3]);
    await waitFor('silent pollers expired', () => app.registry.polling().length === 0, 5000);
    assert.equal(
      app.registry
        .recentlyDisconnected()
        .map((s) => s.nodeId)
        .sort(),
      ['a', 'b', 'c'],
    );
  } finally {
    await app.close();
  }
});

test.run();
