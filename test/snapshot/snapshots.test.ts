/**
 * Type-snapshot versions, snapshot reuse, and the reconciler: what is served as a function of
 * (revision, pins, secrets), with unchanged types keeping their snapshot object.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emptyModel } from '../../src/model/types.ts';
import { ResourceEncoder } from '../../src/snapshot/encoder.ts';
import { decodeToJson } from '../../src/xds/proto-json.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { diffTypes, makeGroupSnapshot, makeTypeSnapshot } from '../../src/snapshot/group-snapshot.ts';
import { reconcile } from '../../src/snapshot/reconcile.ts';
import { makeRevision, type Revision } from '../../src/snapshot/revision.ts';

const enc = new ResourceEncoder();
const cluster = (name: string, ms = 1000) =>
  enc.encode('cluster', name, { name, type: 'STATIC', connect_timeout: `${ms / 1000}s` });
const secret = (name: string, ca: string) =>
  enc.encode('secret', name, {
    name,
    validation_context: { trusted_ca: { inline_bytes: Buffer.from(ca).toString('base64') } },
  });

const DIFF_ROWS: {
  rule: string;
  from: [string, number][];
  to: [string, number][];
  want: [string[], string[], string[]];
}[] = [
  { rule: 'the same content: nothing', from: [['a', 1]], to: [['a', 1]], want: [[], [], []] },
  {
    rule: 'a version changed',
    from: [
      ['a', 1],
      ['b', 1],
    ],
    to: [
      ['a', 2],
      ['b', 1],
    ],
    want: [['a'], [], []],
  },
  {
    rule: 'a resource added',
    from: [['a', 1]],
    to: [
      ['a', 1],
      ['b', 1],
    ],
    want: [[], ['b'], []],
  },
  {
    rule: 'a resource removed',
    from: [
      ['a', 1],
      ['b', 1],
    ],
    to: [['a', 1]],
    want: [[], [], ['b']],
  },
  {
    rule: 'all at once',
    from: [
      ['a', 1],
      ['b', 1],
    ],
    to: [
      ['a', 3],
      ['c', 1],
    ],
    want: [['a'], ['c'], ['b']],
  },
  { rule: 'from nothing', from: [], to: [['a', 1]], want: [[], ['a'], []] },
];
for (const row of DIFF_ROWS)
  test(`diff between type snapshots: ${row.rule}`, () => {
    const snap = (rs: [string, number][]) =>
      makeTypeSnapshot(
        'cluster',
        rs.map(([n, s]) => cluster(n, s * 1000)),
      );
    const from = snap(row.from);
    const to = snap(row.to);
    const d = diffTypes(from, to);
    assert.equal([d.changed, d.added, d.removed.map((r) => r.name)], row.want);
    assert.is(diffTypes(from, to), d, 'computed once per pair, shared');
  });

test('a type version depends on names and resource versions only, not on order', () => {
  const a = makeTypeSnapshot('cluster', [cluster('a'), cluster('b')]);
  const b = makeTypeSnapshot('cluster', [cluster('b'), cluster('a')]);
  const changed = makeTypeSnapshot('cluster', [cluster('a', 2000), cluster('b')]);
  const fewer = makeTypeSnapshot('cluster', [cluster('a')]);
  assert.is(a.version, b.version);
  assert.is.not(a.version, changed.version);
  assert.is.not(a.version, fewer.version);
  assert.is.not(
    makeTypeSnapshot('route', []).version,
    makeTypeSnapshot('cluster', []).version,
    'the kind is part of it',
  );
  assert.equal([...a.resources.keys()], ['a', 'b'], 'sorted by name');
});

test('an encoding is content-addressed: the same JSON is the same object; a build drops what it did not use', () => {
  const e = new ResourceEncoder();
  const one = e.encode('cluster', 'a', { name: 'a', type: 'STATIC' });
  assert.is(e.encode('cluster', 'a', { type: 'STATIC', name: 'a' }), one, 'key order does not matter');
  assert.is(e.stats.encoded, 1);
  assert.is(e.stats.reused, 1);
  e.finishBuild();
  e.encode('cluster', 'b', { name: 'b', type: 'STATIC' });
  e.finishBuild();
  assert.is(e.size, 1, 'a, unused by the last build, is forgotten');
});

test('a route configuration is encoded by virtual host: an edit re-encodes one, the bytes decode to the whole', () => {
  const e = new ResourceEncoder();
  const vhost = (n: number, prefix = '/') => ({
    name: `vh-${n}`,
    domains: [`vh-${n}.example.com`],
    routes: [{ match: { prefix }, route: { cluster: `svc-${n}` } }],
  });
  const vhosts = [vhost(0), vhost(1), vhost(2)];
  const first = e.encode('route', 'edge', { name: 'edge', virtual_hosts: vhosts });
  assert.is(e.stats.partsEncoded, 3);
  e.finishBuild();
  const edited = { name: 'edge', virtual_hosts: [vhosts[0], vhost(1, '/v2/'), vhosts[2]] };
  const second = e.encode('route', 'edge', edited);
  assert.is(e.stats.partsEncoded, 4, 'only the edited virtual host is encoded again');
  assert.is.not(second.version, first.version);
  const decoded = decodeToJson('google.protobuf.Any', second.any);
  assert.equal(decoded, { '@type': TypeUrls.route, ...edited }, 'the concatenated parts are the whole message');
  assert.equal(second.any, new ResourceEncoder().encode('route', 'edge', structuredClone(edited)).any, 'deterministic');
  e.finishBuild();
  e.encode('route', 'edge', { name: 'edge', virtual_hosts: [vhost(0), vhost(1, '/v2/'), vhost(2)] });
  assert.is(e.stats.partsEncoded, 4, 'equal content, other objects: found by content, not encoded');
  e.finishBuild();
  assert.is(e.encode('route', 'edge', { name: 'edge', virtual_hosts: vhosts }).version, first.version);
  assert.is(e.stats.partsEncoded, 5, 'a virtual host no kept resource uses is forgotten by the build that dropped it');

  const bad = new ResourceEncoder().encode('route', 'edge', {
    name: 'edge',
    virtual_hosts: [vhost(0), { ...vhost(1), routes: [{ match: { prefix: '/', headers: [{ name: 'a\r\nb' }] } }] }],
  });
  assert.equal(
    bad.issues.map((i) => i.path),
    ['virtual_hosts[1].routes[0].match.headers[0].name', 'virtual_hosts[1].routes[0]'],
    'problems keep their path in the whole message',
  );
});

test('makeGroupSnapshot keeps a type snapshot whose resources are the same objects', () => {
  const a = cluster('a');
  const first = makeGroupSnapshot('g', [a]);
  const again = makeGroupSnapshot('g', [a], first);
  assert.is(again.types.cluster, first.types.cluster);
  const changed = makeGroupSnapshot('g', [cluster('a', 3000)], first);
  assert.is.not(changed.types.cluster, first.types.cluster);
});

function revision(
  id: number,
  groups: Record<string, { clusters: string[]; ms?: number; secrets?: string[] }>,
): Revision {
  return makeRevision({
    id,
    modelHash: `m${id}`,
    treeHash: `t${id}`,
    appliedAt: `2026-01-0${id}T00:00:00Z`,
    commit: id === 2 ? 'abc123' : undefined,
    model: emptyModel(),
    groups: new Map(
      Object.entries(groups).map(([g, spec]) => [
        g,
        {
          snapshot: makeGroupSnapshot(
            g,
            spec.clusters.map((c) => cluster(c, spec.ms)),
          ),
          secretNames: spec.secrets ?? [],
        },
      ]),
    ),
  });
}

const names = (cfg: ReturnType<typeof reconcile>, group: string, kind: 'cluster' | 'secret') => [
  ...(cfg.groups.get(group)?.types[kind].resources.keys() ?? []),
];

test('reconcile: the revision per group, secrets by name from the current material, provenance', () => {
  const rev = revision(2, { edge: { clusters: ['a', 'b'], secrets: ['cert', 'missing'] }, mesh: { clusters: ['c'] } });
  const cfg = reconcile({ revision: rev, pins: new Map(), secrets: new Map([['cert', secret('cert', 'x')]]) });
  assert.is(cfg.versionId, 2);
  assert.is(cfg.controlPlane, 'fleetxds version 2 commit abc123');
  assert.equal(names(cfg, 'edge', 'cluster'), ['a', 'b']);
  assert.equal(names(cfg, 'edge', 'secret'), ['cert'], 'a secret without material is not served');
  assert.equal(names(cfg, 'mesh', 'secret'), []);
});

test('reconcile: a pin holds its group at the pinned revision, even a group the newest one lacks', () => {
  const old = revision(1, { edge: { clusters: ['old'] }, gone: { clusters: ['g'] } });
  const now = revision(3, { edge: { clusters: ['new'] }, mesh: { clusters: ['m'] } });
  const pins = new Map([
    ['edge', old],
    ['gone', old],
    ['nowhere', old],
  ]);
  const cfg = reconcile({ revision: now, pins, secrets: new Map() });
  assert.equal(names(cfg, 'edge', 'cluster'), ['old']);
  assert.equal(names(cfg, 'mesh', 'cluster'), ['m']);
  assert.equal(names(cfg, 'gone', 'cluster'), ['g']);
  assert.not.ok(cfg.groups.has('nowhere'), 'a pin to a revision without that group serves nothing new');
  assert.is(cfg.versionId, 3);
});

test('reconcile: unchanged types keep the previous snapshot object; a secret rotation changes only SDS', () => {
  const rev = revision(1, { edge: { clusters: ['a'], secrets: ['cert'] } });
  const v1 = reconcile({ revision: rev, pins: new Map(), secrets: new Map([['cert', secret('cert', 'one')]]) });
  // The same revision restored again (other objects, same content) keeps the served objects.
  const restored = revision(1, { edge: { clusters: ['a'], secrets: ['cert'] } });
  const same = reconcile(
    { revision: restored, pins: new Map(), secrets: new Map([['cert', secret('cert', 'one')]]) },
    v1,
  );
  assert.is(same.groups.get('edge')!.types.cluster, v1.groups.get('edge')!.types.cluster);
  assert.is(same.groups.get('edge')!.types.secret, v1.groups.get('edge')!.types.secret);
  const rotated = reconcile(
    { revision: rev, pins: new Map(), secrets: new Map([['cert', secret('cert', 'two')]]) },
    v1,
  );
  assert.is(rotated.groups.get('edge')!.types.cluster, v1.groups.get('edge')!.types.cluster);
  assert.is.not(rotated.groups.get('edge')!.types.secret.version, v1.groups.get('edge')!.types.secret.version);
});

test('reconcile is a function of its inputs: the same inputs give the same served versions', () => {
  const inputs = { revision: revision(1, { edge: { clusters: ['a', 'b'] } }), pins: new Map(), secrets: new Map() };
  const a = reconcile(inputs);
  const b = reconcile(inputs);
  for (const [g, snap] of a.groups)
    for (const [kind, t] of Object.entries(snap.types))
      assert.is(b.groups.get(g)!.types[kind as 'cluster'].version, t.version);
});

test.run();
