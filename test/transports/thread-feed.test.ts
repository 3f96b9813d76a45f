/**
 * The feed that carries published configs to serving threads (thread-feed.ts): after every message
 * of a sequence, what a thread serves equals what the main thread published (versions, names in
 * order, wildcard lists, bytes, node placement, rollout stages), a message carries only the types
 * and resources the threads do not hold, and a thread holds exactly the resources the current
 * config uses. A thread that joins late, from a message made from nothing, follows the shared
 * writer's next messages.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emptyModel, type Model } from '../../src/model/types.ts';
import { servedRollout } from '../../src/rollout/active.ts';
import { compilePlan } from '../../src/rollout/plan.ts';
import type { RolloutState } from '../../src/rollout/state.ts';
import { ResourceEncoder, type EncodedResource } from '../../src/snapshot/encoder.ts';
import { makeGroupSnapshot } from '../../src/snapshot/group-snapshot.ts';
import { reconcile } from '../../src/snapshot/reconcile.ts';
import { makeRevision, revisionGroups, type Revision } from '../../src/snapshot/revision.ts';
import type { PublishedConfig } from '../../src/snapshot/snapshot-cache.ts';
import { groupSnapshotFor } from '../../src/snapshot/snapshot-cache.ts';
import { FeedReader, FeedWriter, type FeedMessage } from '../../src/transports/grpc/thread-feed.ts';
import { RESOURCE_KINDS } from '../../src/xds/resource-types.ts';

const enc = new ResourceEncoder();
const cluster = (name: string, ms: number) =>
  enc.encode('cluster', name, {
    name,
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {} } },
    connect_timeout: `${ms / 1000}s`,
  });
const endpoint = (name: string, port: number) =>
  enc.encode('endpoint', name, {
    cluster_name: name,
    endpoints: [
      { lb_endpoints: [{ endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: port } } } }] },
    ],
  });
const apiListener = (name: string) =>
  enc.encode('listener', name, {
    name,
    api_listener: { api_listener: { '@type': 'type.googleapis.com/google.protobuf.Empty' } },
  });

/** Clusters by name and connect timeout (ms); every cluster also has endpoints on port = timeout. */
type Spec = Record<string, Record<string, number>>;

const MODEL: Model = {
  ...emptyModel(),
  nodeGroups: [
    { kind: 'NodeGroup', name: 'edge', match: { idPattern: 'edge-*' } },
    { kind: 'NodeGroup', name: 'mesh', match: { idPattern: 'mesh-*' } },
  ],
};

function revision(id: number, spec: Spec, model = MODEL): Revision {
  const built = new Map(
    Object.entries(spec).map(([g, clusters]) => {
      const list: EncodedResource[] = Object.entries(clusters).flatMap(([n, ms]) => [cluster(n, ms), endpoint(n, ms)]);
      if (g === 'mesh') list.push(apiListener('grpc-api'));
      return [g, makeGroupSnapshot(g, list)];
    }),
  );
  return makeRevision({
    id,
    modelHash: `m${id}`,
    treeHash: `t${id}`,
    appliedAt: '2026-11-24T00:00:00Z',
    model,
    groups: revisionGroups(built),
  });
}

const publish = (r: Revision, previous?: PublishedConfig): PublishedConfig =>
  reconcile({ revision: r, pins: new Map(), secrets: new Map() }, previous);

/** What a thread serves equals what was published: every group, type, resource and byte. */
function assertSame(got: PublishedConfig, want: PublishedConfig, step: string): void {
  assert.is(got.versionId, want.versionId, step);
  assert.is(got.controlPlane, want.controlPlane, step);
  assert.equal([...got.groups.keys()], [...want.groups.keys()], `${step}: groups`);
  const sameGroups = (a: PublishedConfig['groups'], b: PublishedConfig['groups']) => {
    for (const [name, g] of b) {
      for (const kind of RESOURCE_KINDS) {
        const x = a.get(name)!.types[kind];
        const y = g.types[kind];
        const where = `${step}: ${name} ${kind}`;
        assert.is(x.version, y.version, where);
        assert.equal([...x.resources.keys()], [...y.resources.keys()], `${where}: names in order`);
        assert.equal(
          x.wildcard.map((r) => r.name),
          y.wildcard.map((r) => r.name),
          `${where}: wildcard`,
        );
        for (const [n, r] of y.resources) {
          const f = x.resources.get(n)!;
          assert.ok(f.framed.equals(r.framed), `${where} ${n}: framed bytes`);
          assert.ok(f.any.equals(r.any), `${where} ${n}: Any bytes`);
          assert.is(f.version, r.version);
          if (kind === 'cluster') assert.equal(f.json, r.json, `${where} ${n}: JSON for views`);
        }
      }
    }
  };
  sameGroups(got.groups, want.groups);
  assert.is(!!got.staged, !!want.staged, `${step}: staged`);
  if (want.staged) sameGroups(got.staged!.groups, want.staged.groups);
  for (const id of ['edge-1', 'mesh-1', 'other', 'edge-canary-1']) {
    const node = { id, cluster: '', metadata: {} };
    assert.is(got.resolver.resolve(node), want.resolver.resolve(node), `${step}: ${id} placed alike`);
    const group = want.resolver.resolve(node);
    const a = groupSnapshotFor(got, node, group);
    const b = groupSnapshotFor(want, node, group);
    assert.is(a.stage, b.stage, `${step}: ${id} stage`);
    assert.is(a.controlPlane, b.controlPlane, `${step}: ${id} version served`);
  }
}

const liveKeys = (cfg: PublishedConfig): Set<string> => {
  const keys = new Set<string>();
  for (const g of [...cfg.groups.values(), ...(cfg.staged?.groups.values() ?? [])])
    for (const k of RESOURCE_KINDS) for (const r of g.types[k].resources.values()) keys.add(r.key);
  return keys;
};

const r1 = revision(1, { edge: { a: 1000, b: 1000 }, mesh: { a: 1000, c: 2000 } });
const r2 = revision(2, { edge: { a: 1000, b: 3000 }, mesh: { a: 1000, c: 2000 } });
const r3 = revision(3, { edge: { a: 1000, b: 3000 } }, { ...MODEL, nodeGroups: [MODEL.nodeGroups[0]!] });
const policy = {
  kind: 'Rollout' as const,
  name: 'default',
  stages: [{ name: 'canary', select: { groups: ['edge'], idPattern: 'edge-canary-*' } }],
};
const state: RolloutState = {
  from: 1,
  to: 2,
  status: 'progressing',
  stage: 0,
  stageSince: '2026-11-24T00:00:00Z',
  startedAt: '2026-11-24T00:00:00Z',
};

/**
 * Each step: the config published, how many types and resources its message carries, and how
 * many resources it tells the threads to drop. Groups share equal types (empty routes, secrets)
 * and equal resources (cluster a and its endpoints are in both groups): each is sent once.
 */
const STEPS: { step: string; cfg: () => PublishedConfig; types: number; resources: number; drops: number }[] = [
  {
    // The groups' runtime and extension types are empty here (no layer, no policy filter): one
    // type of each shared by both.
    step: 'first publish: 10 distinct types, 7 distinct resources',
    cfg: () => publish(r1),
    types: 10,
    resources: 7,
    drops: 0,
  },
  { step: 'the same config again: nothing', cfg: () => publish(r1), types: 0, resources: 0, drops: 0 },
  {
    step: "one cluster's timeout and endpoints: two types, two resources",
    cfg: () => publish(r2),
    types: 2,
    resources: 2,
    drops: 2,
  },
  {
    step: 'a rollout from 1 to 2: the others get 1 again (its edge types were dropped), the canary keeps 2',
    cfg: () =>
      reconcile({
        revision: r2,
        pins: new Map(),
        secrets: new Map(),
        rollout: servedRollout({ id: 1, from: r1, plan: compilePlan(policy), state }),
      }),
    types: 2,
    resources: 2,
    drops: 0,
  },
  {
    step: 'the mesh group goes (and node placement changes): its resources and the rollout are dropped',
    cfg: () => publish(r3),
    types: 0,
    resources: 0,
    drops: 5,
  },
  {
    step: 'back to the first version: what it lacks is resent',
    cfg: () => publish(r1),
    types: 5,
    resources: 5,
    drops: 2,
  },
];

test('every step: a thread serves what was published, receives only what it lacks, holds only what is used', () => {
  const writer = new FeedWriter();
  const reader = new FeedReader();
  let late: FeedReader | undefined;
  for (const [i, s] of STEPS.entries()) {
    const cfg = s.cfg();
    const m: FeedMessage = writer.next(cfg);
    assert.is(m.types.length, s.types, `${s.step}: types sent`);
    assert.is(m.resources?.keys.length ?? 0, s.resources, `${s.step}: resources sent`);
    assert.is(m.dropKeys.length, s.drops, `${s.step}: resources dropped`);
    const got = reader.read(m);
    assertSame(got, cfg, s.step);
    assert.is(reader.held.resources, liveKeys(cfg).size, `${s.step}: holds only what is used`);
    // A thread joining at step 2 starts from a message made from nothing, then follows the shared writer.
    if (late) assertSame(late.read(m), cfg, `${s.step} (late thread)`);
    if (i === 1) {
      late = new FeedReader();
      assertSame(late.read(new FeedWriter().next(cfg)), cfg, `${s.step} (late thread joins)`);
    }
  }
});

test('an unchanged group keeps its snapshot object in the thread (streams see "nothing changed" at once)', () => {
  const writer = new FeedWriter();
  const reader = new FeedReader();
  const a = reader.read(writer.next(publish(r1)));
  const b = reader.read(writer.next(publish(r2)));
  assert.is(b.groups.get('mesh'), a.groups.get('mesh'));
  assert.is.not(b.groups.get('edge'), a.groups.get('edge'));
  assert.is(b.groups.get('edge')!.types.listener, a.groups.get('edge')!.types.listener);
});

test('a message out of order is refused, not served half', () => {
  const reader = new FeedReader();
  new FeedWriter().next(publish(r1));
  const writer = new FeedWriter();
  writer.next(publish(r1));
  assert.throws(() => reader.read(writer.next(publish(r2))), /never sent/);
});

test.run();
