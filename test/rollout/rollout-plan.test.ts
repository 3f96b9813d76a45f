/** Stage membership: first matching stage wins; percentages by a stable, nested hash of node.id. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compilePlan, hashPercent } from '../../src/rollout/plan.ts';

const plan = compilePlan({
  kind: 'Rollout',
  name: 'default',
  stages: [
    { name: 'canary', select: { groups: ['edge'], idPattern: 'edge-canary-*' } },
    { name: 'tenth', select: { groups: ['edge'], percent: 10 } },
    { name: 'mesh', select: { groups: ['mesh'] } },
  ],
});
const node = (id: string) => ({ id, cluster: '', metadata: {} });

const ROWS: [string, string, string][] = [
  ['edge-canary-1', 'edge', 'canary'],
  ['edge-canary-1', 'mesh', 'mesh'],
  ['x', 'mesh', 'mesh'],
  ['x', 'other', 'rest'],
];
for (const [id, group, stage] of ROWS) {
  test(`${id} in ${group} -> ${stage}`, () => {
    assert.is(plan.names[plan.stageOf(node(id), group)], stage);
  });
}

test('a percentage selects about that share, the same proxies every time, nested in larger shares', () => {
  const ids = Array.from({ length: 10_000 }, (_, i) => `edge-${i}`);
  const tenth = ids.filter((id) => plan.names[plan.stageOf(node(id), 'edge')] === 'tenth');
  assert.ok(tenth.length > 850 && tenth.length < 1150, `${tenth.length} of 10000`);
  assert.equal(
    ids.filter((id) => plan.names[plan.stageOf(node(id), 'edge')] === 'tenth'),
    tenth,
    'stable',
  );
  for (const id of ids.slice(0, 500)) if (hashPercent(id) < 5) assert.ok(hashPercent(id) < 10);
});

test('defaults: onNack halt; gates 100% ACKed, at least one proxy, no soak, not manual', () => {
  assert.is(plan.onNack, 'halt');
  assert.equal(plan.stages[0]!.gates, { ackedPercent: 100, minProxies: 1, soakMs: 0, manual: false });
  assert.equal(plan.names, ['canary', 'tenth', 'mesh', 'rest']);
});

test.run();
