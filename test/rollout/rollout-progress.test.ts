/**
 * Rollout progress counts proxies, not streams: a proxy with several streams (per-type xDS, or the
 * overrides runtime layer's own stream beside SotW ADS) is one proxy of its stage, up to date only
 * when every stream is, and counted as authenticated only when every stream is.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compilePlan } from '../../src/rollout/plan.ts';
import { rolloutProgress, type NodeView } from '../../src/rollout/progress.ts';
import { startRollout } from '../../src/rollout/state.ts';
import type { GroupSnapshot } from '../../src/snapshot/group-snapshot.ts';
import type { PublishedConfig } from '../../src/snapshot/snapshot-cache.ts';
import { RESOURCE_TYPES, TypeUrls } from '../../src/xds/resource-types.ts';

const plan = compilePlan({
  kind: 'Rollout',
  name: 'default',
  stages: [{ name: 'all', select: { groups: ['edge'] }, gates: { minProxies: 2, ackedPercent: 100 } }],
});
const versions = Object.fromEntries(RESOURCE_TYPES.map((t) => [t.kind, { version: `${t.kind}-2` }]));
const cfg = {
  groups: new Map([['edge', { types: versions } as unknown as GroupSnapshot]]),
} as unknown as PublishedConfig;
const state = startRollout(1, 2, new Date());

/** One stream of `nodeId` holding `kinds` at the new version (or `old`). */
const stream = (nodeId: string, kinds: string[], opts: { old?: boolean; authenticated?: boolean } = {}): NodeView => ({
  nodeId,
  group: 'edge',
  authenticated: opts.authenticated ?? true,
  types: Object.fromEntries(kinds.map((k) => [TypeUrls[k as 'cluster'], { ackedVersion: `${k}-${opts.old ? 1 : 2}` }])),
});

const ROWS: {
  name: string;
  nodes: NodeView[];
  want: { nodes: number; upToDate: number; unauthenticated: number };
  holds: boolean;
}[] = [
  {
    name: 'an ADS stream and its overrides stream are one proxy, up to date when both are',
    nodes: [stream('a', ['cluster', 'listener', 'runtime']), stream('a', ['runtime']), stream('b', ['cluster'])],
    want: { nodes: 2, upToDate: 2, unauthenticated: 0 },
    holds: true,
  },
  {
    name: 'one stream behind keeps the proxy from being up to date',
    nodes: [stream('a', ['cluster', 'listener']), stream('a', ['runtime'], { old: true }), stream('b', ['cluster'])],
    want: { nodes: 2, upToDate: 1, unauthenticated: 0 },
    holds: false,
  },
  {
    name: 'two streams of one proxy do not make two proxies for minProxies',
    nodes: [stream('a', ['cluster']), stream('a', ['runtime'])],
    want: { nodes: 1, upToDate: 1, unauthenticated: 0 },
    holds: false,
  },
  {
    name: 'a proxy with one unauthenticated stream is not counted',
    nodes: [stream('a', ['cluster']), stream('a', ['runtime'], { authenticated: false }), stream('b', ['cluster'])],
    want: { nodes: 1, upToDate: 1, unauthenticated: 1 },
    holds: false,
  },
];

for (const row of ROWS)
  test(row.name, () => {
    const p = rolloutProgress(plan, state, cfg, row.nodes);
    const { nodes, upToDate, unauthenticated } = p.stages[0]!;
    assert.equal({ nodes, upToDate, unauthenticated }, row.want);
    assert.is(p.gateHolds, row.holds);
  });

test.run();
