/**
 * A client that NACKs the same response over and over with a huge message costs one row, one log
 * line and a capped message; a node NACKing many versions is rate-limited per minute.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_NACK_MESSAGE, NACK_REPORTS_PER_MINUTE, NodeRegistry } from '../../src/status/node-registry.ts';
import { connect, T } from '../helpers/ads-client.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('the same NACK 20 times with a 2 MB message: stored and logged once, capped, counted', async () => {
  const logLines: string[] = [];
  const app = await startServer(writeTree(BASE), { logLines });
  try {
    const c = connect(app.grpcPort);
    const s = c.open();
    s.send({ node: { id: 'noisy', cluster: 'c' }, type_url: T.cluster });
    const r = await s.next();
    const huge = 'x'.repeat(2 * 1024 * 1024);
    for (let i = 0; i < 20; i++)
      s.send({
        type_url: T.cluster,
        version_info: '',
        response_nonce: r.nonce,
        error_detail: { code: 13, message: huge },
      });
    const lastNack = () => app.registry.byNodeId('noisy')[0]?.types[T.cluster]?.lastNack;
    await waitFor('all 20 NACKs read', () => lastNack()?.repeats === 19, 20_000, 20);
    const stored = app.stores.nacks.list('noisy');
    assert.is(stored.length, 1);
    assert.ok(stored[0]!.message.length < MAX_NACK_MESSAGE + 100, `stored ${stored[0]!.message.length} characters`);
    assert.match(stored[0]!.message, /more characters not kept/);
    assert.is(logLines.filter((l) => l.includes('"msg":"NACK"')).length, 1);
    assert.ok(
      logLines.every((l) => l.length < 20_000),
      'no huge log line',
    );
    s.close();
    c.close();
  } finally {
    await app.close();
  }
});

test('NACKs of many versions from one node: at most NACK_REPORTS_PER_MINUTE reported', () => {
  const reported: string[] = [];
  const handed: string[] = [];
  const reg = new NodeRegistry((n) => {
    handed.push(n.version);
    if (n.report) reported.push(n.version);
  });
  const s = reg.open({
    nodeId: 'n',
    nodeCluster: 'c',
    group: 'default',
    transport: 'grpc-ads',
    peer: 'p',
    userAgent: '',
    authenticated: false,
  });
  for (let v = 0; v < 100; v++) reg.nacked(s, T.cluster, `v${v}`, String(v), 13, 'bad');
  assert.is(reported.length, NACK_REPORTS_PER_MINUTE);
  assert.is(handed.length, 100, "every NACK is handed on (a rollout's gates see each)");
  assert.is(s.types[T.cluster]!.lastNack!.version, 'v99', 'the status still shows the newest');
});

test.run();
