/** Node -> group resolution: priority, then name; every criterion of a group must hold. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { NodeGroupDoc } from '../../src/model/schema.ts';
import { NodeGroupResolver, type NodeIdentity } from '../../src/model/node-groups.ts';

const group = (name: string, match: NodeGroupDoc['match'], priority?: number): NodeGroupDoc => ({
  kind: 'NodeGroup',
  name,
  match,
  ...(priority === undefined ? {} : { priority }),
});

const GROUPS: NodeGroupDoc[] = [
  group('edge', { cluster: 'edge' }),
  group('edge-canary', { cluster: 'edge', idPattern: 'edge-canary-*' }, 10),
  group('eu', { metadata: { region: 'eu' } }),
  group('b-any', { idPattern: 'x?' }),
  group('a-any', { idPattern: 'x*' }),
  group('default', { cluster: 'ignored' }),
];

const node = (id: string, cluster = '', metadata: Record<string, unknown> = {}): NodeIdentity => ({
  id,
  cluster,
  metadata,
});

const ROWS: [string, NodeIdentity, string][] = [
  ['exact cluster', node('edge-1', 'edge'), 'edge'],
  ['higher priority wins over an earlier name', node('edge-canary-1', 'edge'), 'edge-canary'],
  ['pattern alone is not enough: the cluster must match too', node('edge-canary-1', 'mesh'), 'default'],
  ['metadata equality', node('n', 'mesh', { region: 'eu' }), 'eu'],
  ['metadata of another value', node('n', 'mesh', { region: 'us' }), 'default'],
  ['metadata absent', node('n', 'mesh'), 'default'],
  ['equal priority: first by name', node('x1'), 'a-any'],
  ['glob metacharacters of a regex are literal', node('x.'), 'a-any'],
  ['a group named default never matches by its criteria', node('z', 'ignored'), 'default'],
  ['no group matches: default', node('other', 'other'), 'default'],
];

for (const [name, n, want] of ROWS) {
  test(name, () => {
    assert.is(new NodeGroupResolver(GROUPS).resolve(n), want);
  });
}

test('regex metacharacters in an idPattern do not act as a regex', () => {
  const r = new NodeGroupResolver([group('dots', { idPattern: 'a.b' })]);
  assert.is(r.resolve(node('a.b')), 'dots');
  assert.is(r.resolve(node('axb')), 'default');
});

test.run();
