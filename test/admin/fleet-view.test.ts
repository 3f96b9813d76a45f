/**
 * The fleet at a glance and the node list (admin/fleet-view.ts): a node's state from its types,
 * the per-group summary, the problems worst first, and the filtered, paged list. The status page
 * in Chromium (test/admin/status-page.test.ts) shows them from a running server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  fleetSummary,
  MAX_PAGE,
  nodePage,
  nodeRow,
  type NodeRow,
  type ProblemFacts,
  type ServedVersions,
} from '../../src/admin/fleet-view.ts';
import type { StreamStatus, TypeStatus } from '../../src/status/node-registry.ts';
import { RESOURCE_KINDS, TypeUrls } from '../../src/xds/resource-types.ts';

const served = (version: string): ServedVersions => ({
  types: Object.fromEntries(RESOURCE_KINDS.map((k) => [k, { version: `${k}-${version}` }])) as ServedVersions['types'],
});
const V2 = served('v2');
const CDS = TypeUrls.cluster;
const LDS = TypeUrls.listener;

function stream(nodeId: string, types: Record<string, TypeStatus>, more: Partial<StreamStatus> = {}): StreamStatus {
  return {
    streamId: 1,
    nodeId,
    nodeCluster: 'c',
    group: 'edge',
    transport: 'grpc-ads',
    peer: '127.0.0.1:1',
    userAgent: 'envoy/1.40.0',
    authenticated: false,
    connectedAt: '2026-11-26T10:00:00.000Z',
    types,
    ...more,
  };
}
const acked = (v: string): TypeStatus => ({ sentVersion: v, ackedVersion: v });
const nack = (v: string, at: string, message = 'bad'): TypeStatus => ({
  sentVersion: v,
  ackedVersion: 'cluster-v1',
  lastNack: { version: v, nonce: '1', code: 13, message, at },
});

// Each row: the node's types, what it should hold, the state and what comes with it.
const STATE_ROWS: [
  name: string,
  types: Record<string, TypeStatus>,
  want: ServedVersions | undefined,
  expect: Partial<NodeRow>,
][] = [
  [
    'every subscribed type ACKed at the served version',
    { [CDS]: acked('cluster-v2'), [LDS]: acked('listener-v2') },
    V2,
    { state: 'in-sync' },
  ],
  [
    'one type sent and not ACKed yet: behind since it was sent',
    {
      [CDS]: { ...acked('cluster-v1'), sentVersion: 'cluster-v2', sentAt: '2026-11-26T10:05:00.000Z' },
      [LDS]: acked('listener-v2'),
    },
    V2,
    { state: 'behind', behindSince: '2026-11-26T10:05:00.000Z' },
  ],
  [
    'not even sent yet (a stream that stopped reading): behind since it connected',
    { [CDS]: acked('cluster-v1') },
    V2,
    { state: 'behind', behindSince: '2026-11-26T10:00:00.000Z' },
  ],
  [
    'a NACK of the served version outranks a type behind',
    { [CDS]: nack('cluster-v2', '2026-11-26T10:06:00.000Z', 'unknown cluster'), [LDS]: acked('listener-v1') },
    V2,
    {
      state: 'nacked',
      nack: { typeUrl: CDS, version: 'cluster-v2', message: 'unknown cluster', at: '2026-11-26T10:06:00.000Z' },
    },
  ],
  [
    'a NACK of an older version, since ACKed past: in sync',
    {
      [CDS]: {
        ...acked('cluster-v2'),
        lastNack: { version: 'cluster-v1', nonce: '1', code: 13, message: 'x', at: 'y' },
      },
    },
    V2,
    { state: 'in-sync' },
  ],
  ['types it does not subscribe to do not count', {}, V2, { state: 'in-sync' }],
  [
    'a type URL fleetxds does not serve is ignored',
    { 'type.googleapis.com/x.Y': acked('z') },
    V2,
    { state: 'in-sync' },
  ],
];

for (const [name, types, want, expect] of STATE_ROWS)
  test(`node state: ${name}`, () => {
    const row = nodeRow({ status: stream('n1', types), served: want });
    for (const [k, v] of Object.entries(expect)) assert.equal(row[k as keyof NodeRow], v, k);
    if (!('behindSince' in expect)) assert.is(row.behindSince, undefined);
    if (!('nack' in expect)) assert.is(row.nack, undefined);
  });

test('node row: the version it is served comes along', () => {
  assert.is(nodeRow({ status: stream('n1', {}), served: V2, versionId: 7 }).versionId, 7);
  assert.is(nodeRow({ status: stream('n1', {}), served: V2 }).versionId, undefined);
});

test('node row: client, stage, replica and certificate names come along', () => {
  const row = nodeRow({
    status: {
      ...stream(
        'n1',
        {},
        { stage: 'canary', clientCertificate: { names: 'spiffe://x/n1', fingerprint: 'AA', notAfter: 'z' } },
      ),
      replica: 'r2',
    },
    served: V2,
  });
  assert.equal(
    [row.client, row.stage, row.replica, row.certificate],
    ['envoy/1.40.0', 'canary', 'r2', 'spiffe://x/n1'],
  );
  assert.is(nodeRow({ status: stream('n2', {}, { userAgent: '' }), served: V2 }).client, 'unknown');
});

const row = (nodeId: string, more: Partial<NodeRow> = {}): NodeRow => ({
  nodeId,
  group: 'edge',
  transport: 'grpc-ads',
  client: 'envoy/1.40.0',
  connectedAt: 'x',
  state: 'in-sync',
  ...more,
});
const NOTHING: ProblemFacts = { fileFailures: [], certificates: [], now: Date.parse('2026-11-26T12:00:00.000Z') };

test('summary during a staged rollout: from which version to which, and how many proxies hold each', () => {
  const s = fleetSummary(
    {
      versionId: 7,
      appliedAt: '2026-11-26T11:00:00.000Z',
      groups: ['edge', 'batch'],
      staged: { from: 5, to: 7, groups: new Set(['edge']) },
    },
    [
      row('canary', { versionId: 7 }),
      row('a', { versionId: 5 }),
      row('b', { versionId: 5 }),
      row('sent-7', { versionId: 7, state: 'behind' }),
      row('nacked', { versionId: 7, state: 'nacked' }),
      row('batch-1', { group: 'batch', versionId: 7 }),
    ],
    NOTHING,
  );
  assert.equal(s.groups.find((g) => g.group === 'edge')!.rollout, { from: 5, to: 7, onFrom: 2, onTo: 1, unsettled: 2 });
  assert.is(s.groups.find((g) => g.group === 'batch')!.rollout, undefined, 'a group the rollout does not stage');
});

test('summary: every group of the config, proxies or none, counted by state, transport and client', () => {
  const s = fleetSummary(
    { versionId: 7, appliedAt: '2026-11-26T11:00:00.000Z', groups: ['edge', 'internal', 'batch'] },
    [
      row('a'),
      row('b', { state: 'behind', transport: 'rest' }),
      row('c', { state: 'nacked', client: 'envoy/1.36.2' }),
      row('d', { group: 'internal' }),
      row('e', { group: 'retired' }),
    ],
    NOTHING,
  );
  assert.equal(
    s.groups.map((g) => [g.group, g.proxies, g.versionId]),
    [
      ['batch', 0, 7],
      ['edge', 3, 7],
      ['internal', 1, 7],
      ['retired', 1, 7],
    ],
  );
  const edge = s.groups.find((g) => g.group === 'edge')!;
  assert.equal(edge.states, { nacked: 1, behind: 1, 'in-sync': 1 });
  assert.equal(edge.transports, { 'grpc-ads': 2, rest: 1 });
  assert.equal(edge.clients, { 'envoy/1.40.0': 2, 'envoy/1.36.2': 1 });
  assert.equal(s.totals, { proxies: 5, states: { nacked: 1, behind: 1, 'in-sync': 3 } });
  assert.is(edge.since, '2026-11-26T11:00:00.000Z');
});

// Each row: the facts (beside the rows' NACKs), the problems' kinds in order, and a text to find.
const PROBLEM_ROWS: [name: string, facts: Partial<ProblemFacts>, rows: NodeRow[], kinds: string[], says?: RegExp][] = [
  ['nothing wrong', {}, [row('a')], []],
  [
    'NACKs, one problem per group, with the newest refusal',
    {},
    [
      row('a', { state: 'nacked', nack: { typeUrl: CDS, version: 'v', message: 'old', at: '2026-11-26T10:00:00Z' } }),
      row('b', {
        state: 'nacked',
        nack: { typeUrl: CDS, version: 'v', message: 'newest text', at: '2026-11-26T10:09:00Z' },
      }),
    ],
    ['nack'],
    /2 proxies of edge refused their config; newest: b: newest text/,
  ],
  [
    'a refused tree: the error that refused it, not the warning before it, with the counts of each',
    {
      rejection: {
        rejectedAt: '2026-11-26T10:01:00Z',
        source: 'git abc123',
        diagnostics: [
          {
            severity: 'warning',
            message: 'proxies the transport does not authenticate',
            location: { file: 'rollout.yaml', line: 4, column: 1 },
          },
          {
            severity: 'error',
            message: 'service "order" does not exist',
            location: { file: 'services/a.yaml', line: 9, column: 5 },
          },
          { severity: 'error', message: 'other' },
        ],
      },
    },
    [],
    ['rejected-tree'],
    /was refused: services\/a\.yaml:9: service "order" does not exist \(2 errors, 1 warning\)$/,
  ],
  [
    'a refused tree with one error and nothing else says so',
    {
      rejection: {
        rejectedAt: '2026-11-26T10:01:00Z',
        source: 's',
        diagnostics: [{ severity: 'error', message: 'bad', location: { file: 'a.yaml', line: 2, column: 1 } }],
      },
    },
    [],
    ['rejected-tree'],
    /was refused: a\.yaml:2: bad \(1 error\)$/,
  ],
  [
    'a halted rollout, an unreadable tree and a file failure; errors before warnings',
    {
      rollout: { id: 3, status: 'halted', stage: 'canary', halt: { reason: 'nack', at: 't', message: 'bad route' } },
      unreadableTree: { since: 't', reason: 'EACCES' },
      fileFailures: [{ group: 'edge', error: 'ENOSPC', at: 't' }],
      replicasBehind: 2,
      certificates: [{ listener: 'https', subject: 'CN=a', notAfter: '2026-12-01T00:00:00.000Z' }],
    },
    [],
    ['unreadable-tree', 'rollout-halted', 'file-failure', 'replica-behind', 'certificate-expiring'],
    /rollout 3 is halted at stage canary: a proxy refused the new version \(bad route\)/,
  ],
  [
    'a certificate far from expiry is not a problem; one expiring within a day is an error',
    {
      certificates: [
        { listener: 'far', subject: 'CN=far', notAfter: '2027-06-01T00:00:00.000Z' },
        { listener: 'soon', subject: 'CN=soon', notAfter: '2026-11-26T20:00:00.000Z' },
      ],
    },
    [],
    ['certificate-expiring'],
    /listener soon \(CN=soon\) expires/,
  ],
  ['a shared store that cannot be read', { replicasBehind: null }, [], ['replica-behind'], /cannot be read/],
  [
    "proxies' client certificates expiring within 14 days: one problem, the first to expire named",
    {},
    [
      row('far', { certificate: 'URI:x/far', certificateNotAfter: '2027-06-01T00:00:00.000Z' }),
      row('soon', { certificate: 'URI:x/soon', certificateNotAfter: '2026-12-01T00:00:00.000Z' }),
      row('sooner', { certificate: 'URI:x/sooner', certificateNotAfter: '2026-11-30T00:00:00.000Z' }),
    ],
    ['certificate-expiring'],
    /client certificates of 2 proxies expire within 14 days; first: sooner \(URI:x\/sooner\)/,
  ],
];

for (const [name, facts, rows, kinds, says] of PROBLEM_ROWS)
  test(`problems: ${name}`, () => {
    const { problems } = fleetSummary(undefined, rows, { ...NOTHING, ...facts });
    assert.equal(
      problems.map((p) => p.kind),
      kinds,
    );
    if (says)
      assert.ok(
        problems.some((p) => says.test(p.text)),
        problems.map((p) => p.text).join('\n'),
      );
  });

const many = [
  row('web-10', { versionId: 6 }),
  row('web-2', { state: 'behind', behindSince: '2026-11-26T10:05:00Z' }),
  row('web-3', { state: 'behind', behindSince: '2026-11-26T10:01:00Z' }),
  row('api-1', { group: 'internal', transport: 'rest', client: 'envoy/1.36.2' }),
  row('WEB-9', { state: 'nacked' }),
];

// Each row: filter, offset, limit, the node ids of the page and the total matching.
const PAGE_ROWS: [
  name: string,
  filter: Parameters<typeof nodePage>[1],
  offset: number,
  limit: number,
  ids: string[],
  total: number,
][] = [
  [
    'problems first: NACKed, then the longest behind, then by id',
    {},
    0,
    50,
    ['WEB-9', 'web-3', 'web-2', 'api-1', 'web-10'],
    5,
  ],
  ['search is a substring of the id, any case', { q: 'web' }, 0, 50, ['WEB-9', 'web-3', 'web-2', 'web-10'], 4],
  ['search text is not a pattern', { q: 'web-.*' }, 0, 50, [], 0],
  ['by group', { group: 'internal' }, 0, 50, ['api-1'], 1],
  ['by state', { state: 'behind' }, 0, 50, ['web-3', 'web-2'], 2],
  ['by transport and client', { transport: 'rest', client: 'envoy/1.36.2' }, 0, 50, ['api-1'], 1],
  ['by the version served', { versionId: 6 }, 0, 50, ['web-10'], 1],
  ['a page', {}, 1, 2, ['web-3', 'web-2'], 5],
  ['past the end', {}, 10, 2, [], 5],
  ['a limit of nothing is one', {}, 0, 0, ['WEB-9'], 5],
  ['a negative offset starts at the first', {}, -3, 1, ['WEB-9'], 5],
];

for (const [name, filter, offset, limit, ids, total] of PAGE_ROWS)
  test(`node page: ${name}`, () => {
    const p = nodePage(many, filter, offset, limit);
    assert.equal(
      p.nodes.map((n) => n.nodeId),
      ids,
    );
    assert.is(p.total, total);
    assert.is(p.all, many.length);
  });

test('node page: numbers in ids sort by value', () => {
  assert.equal(
    nodePage([row('n-10'), row('n-9'), row('n-100')], {}, 0, 10).nodes.map((n) => n.nodeId),
    ['n-9', 'n-10', 'n-100'],
  );
});

test('node page: the limit is capped, search text is cut, facets count the whole list', () => {
  const rows = Array.from({ length: MAX_PAGE + 10 }, (_, i) => row(`n-${i}`));
  assert.is(nodePage(rows, {}, 0, 10_000).nodes.length, MAX_PAGE);
  assert.is(nodePage(rows, { q: `n-1${'x'.repeat(10_000)}` }, 0, 10).total, 0);
  const p = nodePage(many, { group: 'edge' }, 0, 1);
  assert.equal(p.facets.group, { edge: 4, internal: 1 });
  assert.equal(p.facets.client, { 'envoy/1.40.0': 4, 'envoy/1.36.2': 1 });
});

test.run();
