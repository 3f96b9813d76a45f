/**
 * One view of the fleet: a replica's status API and page list the proxies of its peers too, each
 * with the replica it is on; metrics carry a replica label; a peer that does not answer is listed
 * as unreachable while the replica's own proxies are still shown.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, T } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('the status API of one replica shows the proxies of both, with their replica', async () => {
  const dir = writeTree(BASE);
  const r2 = await startServer(dir, { replica: { name: 'r2' } });
  const r1 = await startServer(dir, { replica: { name: 'r1', peers: [`http://127.0.0.1:${r2.adminPort}`] } });
  const c1 = connect(r1.grpcPort);
  const c2 = connect(r2.grpcPort);
  try {
    for (const [c, id] of [
      [c1, 'on-r1'],
      [c2, 'on-r2'],
    ] as const) {
      const s = c.open();
      s.send({ node: { id, cluster: 'c' }, type_url: T.cluster });
      await s.next();
    }
    const status = await (await fetch(`http://127.0.0.1:${r1.adminPort}/api/v1/status`)).json();
    const where = Object.fromEntries(status.nodes.map((n: any) => [n.nodeId, n.replica]));
    assert.equal(where, { 'on-r1': 'r1', 'on-r2': 'r2' });
    assert.equal(
      status.replicas.map((r: any) => [r.replica, r.nodes]),
      [
        ['r1', 1],
        ['r2', 1],
      ],
    );
    const nodes = await (await fetch(`http://127.0.0.1:${r1.adminPort}/api/v1/nodes`)).json();
    assert.equal(nodes.connected.map((n: any) => `${n.nodeId}@${n.replica}`).sort(), ['on-r1@r1', 'on-r2@r2']);
    const metrics = await (await fetch(`http://127.0.0.1:${r1.adminPort}/metrics`)).text();
    assert.match(metrics, /fleetxds_config_version\{replica="r1"\} \d+/);

    // The peer goes away: its proxies are no longer listed, the failure is, ours still are.
    c2.close();
    await r2.close();
    const alone = await (await fetch(`http://127.0.0.1:${r1.adminPort}/api/v1/status`)).json();
    assert.equal(
      alone.nodes.map((n: any) => n.nodeId),
      ['on-r1'],
    );
    assert.ok(alone.replicas[1].error, `the unreachable peer is reported: ${JSON.stringify(alone.replicas)}`);
  } finally {
    c1.close();
    await r1.close();
  }
});

test.run();
