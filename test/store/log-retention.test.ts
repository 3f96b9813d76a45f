/**
 * The logs a client or a stream of pushes can grow are bounded: NACKs per node, per version and
 * overall, and by age; rejected trees and the audit by count and age; NACK lines in the server's
 * own log by a per-minute budget.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { openStores } from '../../src/store/database.ts';
import type { NackEvent } from '../../src/store/nacks.ts';
import { retentionOf } from '../../src/store/retention.ts';
import { LineBudget } from '../../src/shared/line-budget.ts';
import { tempDir } from '../helpers/tree.ts';

const nack = (nodeId: string, version: string, at = new Date().toISOString(), message = 'x'): NackEvent => ({
  at,
  nodeId,
  nodeCluster: 'c',
  nodeGroup: 'default',
  transport: 'grpc-ads',
  typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  version,
  nonce: '1',
  errorCode: 13,
  message,
});

test('3,000 made-up node ids with 5 KB NACKs each: the log keeps its bound in rows and bytes', () => {
  const path = join(tempDir(), 'x.db');
  const stores = openStores(path, retentionOf({ nacks: { rows: 500 } }));
  const big = 'e'.repeat(5000);
  for (let i = 0; i < 3000; i++) stores.nacks.record(nack(`forged-${i}`, `v${i % 7}`, undefined, big));
  const rows = stores.nacks.list(undefined, 100_000);
  assert.ok(rows.length <= 500 + 64, `${rows.length} rows`);
  assert.is(rows[0]!.nodeId, 'forged-2999', 'the newest are kept');
  stores.checkpoint();
  assert.ok(statSync(path).size < 4 << 20, `database ${statSync(path).size} bytes`);
  stores.close();
});

test('per node, per version, once per (node, type, version), and by age', () => {
  const stores = openStores(':memory:', retentionOf({ nacks: { perNode: 5, perVersion: 10, days: 30 } }));
  for (let v = 0; v < 40; v++) stores.nacks.record(nack('one-node', `v${v}`));
  assert.is(stores.nacks.list('one-node', 100).length, 5, 'a node keeps its newest 5');
  assert.is(stores.nacks.list('one-node', 1)[0]!.version, 'v39');
  assert.is(stores.nacks.record(nack('one-node', 'v39')), false, 'the same NACK again is not stored');
  for (let i = 0; i < 50; i++) stores.nacks.record(nack(`n-${i}`, 'bad', undefined, `reason ${i}`));
  assert.is(
    stores.nacks.list(undefined, 1000).filter((r) => r.version === 'bad').length,
    10,
    'one version keeps at most 10 NACKs however many nodes reject it',
  );
  const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
  const s2 = openStores(':memory:', retentionOf({ nacks: { days: 30 } }));
  for (let i = 0; i < 63; i++) s2.nacks.record(nack(`old-${i}`, 'v', old));
  s2.nacks.record(nack('new', 'v'));
  assert.equal(
    s2.nacks.list(undefined, 100).map((r) => r.nodeId),
    ['new'],
    'entries past their days are pruned',
  );
  stores.close();
  s2.close();
});

test("NACKs under made-up node ids neither hide a real proxy's reason nor keep it out", () => {
  const stores = openStores(':memory:', retentionOf({ nacks: { perVersion: 1000 } }));
  const ofVersion = (v: string) => stores.nacks.list(undefined, 5000).filter((r) => r.version === v);
  // 1,000 made-up nodes with one message fill the version's bound: a real proxy's NACK is still kept.
  for (let i = 0; i < 1000; i++) stores.nacks.record(nack(`fake-${i}`, 'v7', undefined, 'same words'));
  assert.is(ofVersion('v7').length, 1000);
  assert.is(stores.nacks.record(nack('real-proxy', 'v7', undefined, 'same words')), true);
  assert.is(ofVersion('v7').length, 1000);
  assert.is(ofVersion('v7')[0]!.nodeId, 'real-proxy');
  assert.not.ok(
    ofVersion('v7').some((r) => r.nodeId === 'fake-0'),
    'the oldest row of the same message made room',
  );
  // Another message past the bound takes the oldest row's place: its reason is kept too.
  assert.is(stores.nacks.record(nack('other-proxy', 'v7', undefined, 'other words')), true);
  assert.equal(
    ofVersion('v7')
      .slice(0, 2)
      .map((r) => r.message),
    ['other words', 'same words'],
  );
  // 1,000 made-up nodes with as many messages fill the version's bound: a real one is still kept.
  for (let i = 0; i < 1000; i++) stores.nacks.record(nack(`fake-${i}`, 'v8', undefined, `words ${i}`));
  assert.is(stores.nacks.record(nack('real-proxy', 'v8', undefined, 'what Envoy said')), true);
  const v8 = ofVersion('v8');
  assert.is(v8.length, 1000);
  assert.is(v8[0]!.nodeId, 'real-proxy');
  assert.is(v8[0]!.message, 'what Envoy said');
  stores.close();
});

test('rejected trees and the audit are bounded by count', () => {
  const stores = openStores(':memory:', retentionOf({ rejections: { rows: 10 }, audit: { rows: 100 } }));
  for (let i = 0; i < 640; i++) stores.rejections.record(`t${i}`, '/x', []);
  for (let i = 0; i < 640; i++) stores.audit.append('ops', 'pin', { i });
  assert.is(stores.rejections.latest()!.treeHash, 't639');
  assert.ok(stores.audit.list(10_000).length <= 100 + 64, `${stores.audit.list(10_000).length} audit rows`);
  stores.close();
});

test('NACK lines in the log: at most N a window; the first line after says how many were dropped', () => {
  const budget = new LineBudget(3, 1000);
  const rows: [now: number, allowed: boolean, droppedBefore: number][] = [
    [0, true, 0],
    [10, true, 0],
    [20, true, 0],
    [30, false, 0],
    [40, false, 0],
    [999, false, 0],
    [1000, true, 3],
    [1001, true, 0],
  ];
  for (const [now, allowed, droppedBefore] of rows)
    assert.equal(budget.take(now), { allowed, droppedBefore }, `at ${now}`);
});

test.run();
