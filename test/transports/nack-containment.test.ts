/**
 * NACK containment (GroupAckTracker): which type snapshot a node connecting to its group is first
 * served, after the group's nodes ACKed and NACKed versions. Table-driven: events in, choice out.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { EncodedResource } from '../../src/snapshot/encoder.ts';
import { makeTypeSnapshot, type TypeSnapshot } from '../../src/snapshot/group-snapshot.ts';
import { GroupAckTracker } from '../../src/transports/group-ack-tracker.ts';

const res = (name: string, version: string) => ({ kind: 'cluster', name, version }) as unknown as EncodedResource;
const V1 = makeTypeSnapshot('cluster', [res('a', '1')]);
const V2 = makeTypeSnapshot('cluster', [res('a', '2')]);
const V3 = makeTypeSnapshot('cluster', [res('a', '3')]);

type Event = ['ack' | 'nack', string, TypeSnapshot];

interface Row {
  name: string;
  enabled: boolean;
  events: Event[];
  group: string;
  current: TypeSnapshot;
  served: TypeSnapshot;
}

const ROWS: Row[] = [
  {
    name: 'off: always the current version',
    enabled: false,
    events: [
      ['ack', 'g', V1],
      ['nack', 'g', V2],
    ],
    group: 'g',
    current: V2,
    served: V2,
  },
  { name: 'nothing known: the current version', enabled: true, events: [], group: 'g', current: V2, served: V2 },
  {
    name: 'current NACKed, earlier ACKed: the earlier one',
    enabled: true,
    events: [
      ['ack', 'g', V1],
      ['nack', 'g', V2],
    ],
    group: 'g',
    current: V2,
    served: V1,
  },
  {
    name: 'NACKed but nothing ACKed before: the current one (no better choice)',
    enabled: true,
    events: [['nack', 'g', V2]],
    group: 'g',
    current: V2,
    served: V2,
  },
  {
    name: 'NACKed then ACKed by another node: the current one',
    enabled: true,
    events: [
      ['ack', 'g', V1],
      ['nack', 'g', V2],
      ['ack', 'g', V2],
    ],
    group: 'g',
    current: V2,
    served: V2,
  },
  {
    name: 'a newer version than the NACKed one: the newer one',
    enabled: true,
    events: [
      ['ack', 'g', V1],
      ['nack', 'g', V2],
    ],
    group: 'g',
    current: V3,
    served: V3,
  },
  {
    name: "another group's NACK does not contain this group",
    enabled: true,
    events: [
      ['ack', 'h', V1],
      ['nack', 'h', V2],
    ],
    group: 'g',
    current: V2,
    served: V2,
  },
];

for (const row of ROWS) {
  test(row.name, () => {
    const t = new GroupAckTracker(row.enabled);
    for (const [what, group, snap] of row.events) {
      if (what === 'ack') t.acked(group, snap);
      else t.nacked(group, snap.kind, snap.version);
    }
    assert.is(t.firstServe(row.group, 'cluster', row.current), row.served);
  });
}

test('the NACKed set per group and type is bounded (a client NACKing every version cannot grow it)', () => {
  const t = new GroupAckTracker(true);
  for (let i = 0; i < 1000; i++) t.nacked('g', 'cluster', `v${i}`);
  assert.ok(t.isNacked('g', 'cluster', 'v999'));
  assert.not.ok(t.isNacked('g', 'cluster', 'v0'), 'the oldest are forgotten');
});

test.run();
