/**
 * `explainNode`, rule by rule: given the facts about one type of one node, which state and which
 * rules explain it. The end-to-end case with real Envoy is test/e2e/envoy-explain.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { explainNode, type NodeFacts, type StreamFacts, type TypeFacts } from '../../src/admin/explain.ts';
import type { TypeStatus } from '../../src/status/node-registry.ts';

const ADS: StreamFacts = { transport: 'grpc-ads', connected: true };
const NACK = { version: 'v2', nonce: '3', code: 13, message: 'bad cluster', at: '2026-11-26T10:00:00.000Z' };

interface Row {
  name: string;
  node?: Partial<NodeFacts>;
  type: Partial<TypeFacts> & { status?: TypeStatus };
  state: string;
  rules: string[];
  says?: RegExp;
}

const ROWS: Row[] = [
  {
    name: 'in sync with the newest version',
    type: { newest: 'v2', served: 'v2', status: { sentVersion: 'v2', ackedVersion: 'v2' }, stream: ADS },
    state: 'in sync',
    rules: [],
    says: /the newest version \(7\)/,
  },
  {
    name: 'an operator pin holds the group at an older version',
    node: {
      servedVersionId: 5,
      pin: { group: 'edge', versionId: 5, actor: 'alice@cli', pinnedAt: '2026-11-26T09:00:00.000Z' },
    },
    type: { newest: 'v2', served: 'v1', status: { sentVersion: 'v1', ackedVersion: 'v1' }, stream: ADS },
    state: 'in sync',
    rules: ['pin'],
    says: /pinned to version 5 \(by alice@cli/,
  },
  {
    name: 'a pin whose version has the same bytes for this type changes nothing for it',
    node: { pin: { group: 'edge', versionId: 5, actor: 'alice', pinnedAt: 'x' } },
    type: { newest: 'v2', served: 'v2', status: { sentVersion: 'v2', ackedVersion: 'v2' }, stream: ADS },
    state: 'in sync',
    rules: [],
  },
  {
    name: 'a rollout stage not yet promoted keeps the previous version',
    node: { servedVersionId: 6, rollout: { id: 3, stage: 'rest', servesNew: false, from: 6, to: 7 } },
    type: { newest: 'v2', served: 'v1', status: { sentVersion: 'v1', ackedVersion: 'v1' }, stream: ADS },
    state: 'in sync',
    rules: ['rollout-stage'],
    says: /rollout #3: stage "rest" is not promoted yet, so it stays on version 6/,
  },
  {
    name: 'a promoted stage gets the newest version',
    node: { rollout: { id: 3, stage: 'canary', servesNew: true, from: 6, to: 7 } },
    type: { newest: 'v2', served: 'v2', status: { sentVersion: 'v2', ackedVersion: 'v2' }, stream: ADS },
    state: 'in sync',
    rules: [],
  },
  {
    name: 'the node refused the version: NACK containment, with its message',
    type: {
      newest: 'v2',
      served: 'v2',
      status: { sentVersion: 'v2', ackedVersion: 'v1', lastNack: NACK },
      stream: ADS,
    },
    state: 'refused',
    rules: ['nack'],
    says: /refused v2 .* not sent it again: bad cluster/,
  },
  {
    name: 'the group refused it and the node was first served the last accepted version',
    node: { serveLastAckedOnNack: true },
    type: {
      newest: 'v2',
      served: 'v2',
      status: { sentVersion: 'v1', ackedVersion: 'v1' },
      groupNacked: true,
      stream: ADS,
    },
    state: 'behind',
    rules: ['group-nack'],
    says: /refused by another node of the group/,
  },
  {
    name: 'routes wait for the endpoints of new clusters (warming hold)',
    type: {
      kind: 'route',
      newest: 'v2',
      served: 'v2',
      status: { sentVersion: 'v1', ackedVersion: 'v1' },
      stream: { ...ADS, warmingSince: '2026-11-26T10:00:00.000Z' },
    },
    state: 'behind',
    rules: ['warming-hold'],
  },
  {
    name: 'endpoints never wait for the warming hold',
    type: {
      kind: 'endpoint',
      newest: 'v2',
      served: 'v2',
      status: { sentVersion: 'v1', ackedVersion: 'v1' },
      stream: { ...ADS, warmingSince: '2026-11-26T10:00:00.000Z' },
    },
    state: 'behind',
    rules: ['in-flight'],
  },
  {
    name: 'a stream that stopped reading catches up later',
    type: {
      newest: 'v3',
      served: 'v3',
      status: { sentVersion: 'v1', ackedVersion: 'v1' },
      stream: { ...ADS, behindSince: '2026-11-26T10:00:00.000Z' },
    },
    state: 'behind',
    rules: ['catch-up'],
    says: /has not read its last response/,
  },
  {
    name: 'a REST poller gets it at its next poll',
    type: {
      newest: 'v2',
      served: 'v2',
      status: { sentVersion: 'v1', ackedVersion: 'v1' },
      stream: { transport: 'rest', connected: true, lastSeenAt: '2026-11-26T10:00:00.000Z' },
    },
    state: 'behind',
    rules: ['next-poll'],
  },
  {
    name: 'sent and not acknowledged yet',
    type: { newest: 'v2', served: 'v2', status: { sentVersion: 'v2', ackedVersion: 'v1' }, stream: ADS },
    state: 'behind',
    rules: ['in-flight'],
  },
  {
    name: 'a disconnected node',
    type: {
      newest: 'v2',
      served: 'v2',
      status: { sentVersion: 'v1', ackedVersion: 'v1' },
      stream: { ...ADS, connected: false },
    },
    state: 'behind',
    rules: ['disconnected'],
  },
  {
    name: 'a type the node never asked for',
    type: { kind: 'secret', newest: 'v2', served: 'v2', stream: ADS },
    state: 'not subscribed',
    rules: ['not-subscribed'],
  },
  {
    name: 'a pin and a NACK together: both rules, placement first',
    node: { servedVersionId: 5, pin: { group: 'edge', versionId: 5, actor: 'bob', pinnedAt: 'x' } },
    type: {
      newest: 'v2',
      served: 'v1',
      status: { sentVersion: 'v1', ackedVersion: 'v0', lastNack: { ...NACK, version: 'v1' } },
      stream: ADS,
    },
    state: 'refused',
    rules: ['pin', 'nack'],
  },
];

for (const row of ROWS) {
  test(row.name, () => {
    const facts: NodeFacts = {
      nodeId: 'edge-1',
      group: 'edge',
      newestVersionId: 7,
      servedVersionId: 7,
      serveLastAckedOnNack: false,
      ...row.node,
      types: [{ kind: 'cluster', groupNacked: false, ...row.type }],
    };
    const [t] = explainNode(facts).types;
    assert.is(t!.state, row.state);
    assert.equal(
      t!.rules.map((r) => r.rule),
      row.rules,
    );
    if (row.says) assert.match(t!.summary, row.says);
  });
}

test('the node is connected when any of its streams is, with each transport once', () => {
  const e = explainNode({
    nodeId: 'n',
    group: 'g',
    newestVersionId: 1,
    servedVersionId: 1,
    serveLastAckedOnNack: false,
    types: [
      { kind: 'cluster', groupNacked: false, stream: { transport: 'grpc-cds', connected: false } },
      { kind: 'listener', groupNacked: false, stream: { transport: 'grpc-lds', connected: true } },
      { kind: 'route', groupNacked: false, stream: { transport: 'grpc-lds', connected: true } },
    ],
  });
  assert.ok(e.connected);
  assert.equal(e.transports, ['grpc-cds', 'grpc-lds']);
});

test.run();
