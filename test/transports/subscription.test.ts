/**
 * The wildcard rules of the xDS protocol (docs/xds-protocol.md §4.5 and DELTA-07), one table row per rule, for
 * both protocol variants. Each row starts from a fresh subscription and applies requests in order.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Subscription } from '../../src/transports/subscription.ts';

type Step = { sotw: string[] } | { delta: [string[], string[]] };

interface Row {
  rule: string;
  wildcardType: boolean;
  steps: Step[];
  /** After the last step. */
  wildcard: boolean;
  names: string[];
  /** What the last step reports as newly added (SotW: names and `*`; delta: names). */
  added?: string[];
  wildcardAdded?: boolean;
}

const ROWS: Row[] = [
  {
    rule: 'SotW: empty first request on LDS/CDS is the legacy wildcard',
    wildcardType: true,
    steps: [{ sotw: [] }],
    wildcard: true,
    names: [],
    added: ['*'],
  },
  {
    rule: 'SotW: empty first request on EDS/RDS is not a wildcard',
    wildcardType: false,
    steps: [{ sotw: [] }],
    wildcard: false,
    names: [],
    added: [],
  },
  {
    rule: 'SotW: "*" is the explicit wildcard, names beside it kept',
    wildcardType: true,
    steps: [{ sotw: ['*', 'a'] }],
    wildcard: true,
    names: ['a'],
    added: ['a', '*'],
  },
  {
    rule: 'SotW: "*" means nothing special on EDS',
    wildcardType: false,
    steps: [{ sotw: ['*', 'a'] }],
    wildcard: false,
    names: ['a'],
    added: ['a'],
  },
  {
    rule: 'SotW: after names were requested, an empty list means nothing',
    wildcardType: true,
    steps: [{ sotw: ['a'] }, { sotw: [] }],
    wildcard: false,
    names: [],
    added: [],
  },
  {
    rule: 'SotW: an ACK repeating the names adds nothing',
    wildcardType: false,
    steps: [{ sotw: ['a', 'b'] }, { sotw: ['b', 'a'] }],
    wildcard: false,
    names: ['a', 'b'],
    added: [],
  },
  {
    rule: 'SotW: a new name is reported as added, a dropped one is gone',
    wildcardType: false,
    steps: [{ sotw: ['a', 'b'] }, { sotw: ['b', 'c'] }],
    wildcard: false,
    names: ['b', 'c'],
    added: ['c'],
  },
  {
    rule: 'SotW: the legacy wildcard repeated stays the wildcard',
    wildcardType: true,
    steps: [{ sotw: [] }, { sotw: [] }],
    wildcard: true,
    names: [],
    added: [],
  },
  {
    rule: 'SotW: leaving the wildcard for names',
    wildcardType: true,
    steps: [{ sotw: [] }, { sotw: ['a'] }],
    wildcard: false,
    names: ['a'],
    added: ['a'],
  },
  {
    rule: 'delta: empty first request on LDS/CDS is the legacy wildcard',
    wildcardType: true,
    steps: [{ delta: [[], []] }],
    wildcard: true,
    names: [],
    added: [],
    wildcardAdded: true,
  },
  {
    rule: 'delta: empty first request on EDS is nothing',
    wildcardType: false,
    steps: [{ delta: [[], []] }],
    wildcard: false,
    names: [],
    added: [],
    wildcardAdded: false,
  },
  {
    rule: 'delta: subscribe "*" and names',
    wildcardType: true,
    steps: [{ delta: [['*', 'a'], []] }],
    wildcard: true,
    names: ['a'],
    added: ['a'],
    wildcardAdded: true,
  },
  {
    rule: 'delta: unsubscribing "*" leaves the explicit names',
    wildcardType: true,
    steps: [{ delta: [['*', 'a'], []] }, { delta: [[], ['*']] }],
    wildcard: false,
    names: ['a'],
    added: [],
    wildcardAdded: false,
  },
  {
    rule: 'delta: an empty later request does not start the wildcard',
    wildcardType: true,
    steps: [{ delta: [['a'], []] }, { delta: [[], []] }],
    wildcard: false,
    names: ['a'],
    added: [],
    wildcardAdded: false,
  },
  {
    rule: 'delta: a name subscribed again is reported again (it must be answered)',
    wildcardType: false,
    steps: [{ delta: [['a'], []] }, { delta: [['a'], []] }],
    wildcard: false,
    names: ['a'],
    added: ['a'],
    wildcardAdded: false,
  },
  {
    rule: 'delta: unsubscribe removes a name',
    wildcardType: false,
    steps: [{ delta: [['a', 'b'], []] }, { delta: [[], ['a']] }],
    wildcard: false,
    names: ['b'],
    added: [],
    wildcardAdded: false,
  },
  {
    rule: 'delta: "*" on a type without wildcard semantics is ignored',
    wildcardType: false,
    steps: [{ delta: [['*'], []] }],
    wildcard: false,
    names: [],
    added: [],
    wildcardAdded: false,
  },
];

for (const row of ROWS) {
  test(row.rule, () => {
    const sub = new Subscription(row.wildcardType);
    let added: string[] = [];
    let wildcardAdded: boolean | undefined;
    row.steps.forEach((step, i) => {
      if ('sotw' in step) added = sub.setSotw(step.sotw);
      else ({ added, wildcardAdded } = sub.applyDelta(step.delta[0], step.delta[1], i === 0));
    });
    assert.is(sub.wildcard, row.wildcard, 'wildcard');
    assert.equal([...sub.names].sort(), row.names, 'names');
    if (row.added) assert.equal(added, row.added, 'added');
    if (row.wildcardAdded !== undefined) assert.is(wildcardAdded, row.wildcardAdded, 'wildcardAdded');
    assert.is(sub.isEmpty(), !row.wildcard && row.names.length === 0, 'isEmpty');
    for (const n of row.names) assert.ok(sub.covers(n), `covers ${n}`);
    assert.is(sub.covers('never-named'), row.wildcard, 'covers an unnamed resource only under the wildcard');
    assert.is(sub.selects({ name: 'never-named' }), row.wildcard, 'selects an unnamed resource under the wildcard');
    assert.not.ok(sub.selects({ name: 'never-named', namedOnly: true }), 'never one sent only by name, unnamed');
    for (const n of row.names) assert.ok(sub.selects({ name: n, namedOnly: true }), `selects ${n}, named`);
  });
}

test('streams naming the same many resources share one set; a change makes a set of its own', () => {
  const names = Array.from({ length: 100 }, (_, i) => `cluster-${i}`);
  const a = new Subscription(false);
  const b = new Subscription(false);
  a.setSotw(names);
  b.setSotw([...names]);
  assert.ok(a.names === b.names, 'one set for both');
  const shared = a.names;
  const decoded = (xs: string[]) => xs.map((n) => Buffer.from(n).toString()); // strings of their own
  assert.equal(a.setSotw(decoded(names)), [], 'an ACK repeating the names, in order');
  assert.equal(a.setSotw(decoded([...names].reverse())), [], 'in another order');
  assert.ok(a.names === shared, 'neither made a set');
  const c = new Subscription(false);
  c.setSotw([...names.slice(1), 'other']);
  assert.ok(c.names !== a.names, 'other names, another set');
  assert.equal(b.setSotw([...names, 'extra']), ['extra']);
  assert.ok(!a.names.has('extra'), 'a change of one stream is not seen by the other');
  assert.is(a.names.size, 100);
  const few = new Subscription(false);
  const alsoFew = new Subscription(false);
  few.setSotw(['x', 'y']);
  alsoFew.setSotw(['x', 'y']);
  assert.ok(few.names !== alsoFew.names, 'small sets are not pooled');
});

test('delta streams that come to name the same many resources, in any order, share one set', () => {
  const names = Array.from({ length: 100 }, (_, i) => `cluster-${i}`);
  const a = new Subscription(false);
  const b = new Subscription(false);
  a.applyDelta(names.slice(0, 60), [], true);
  a.applyDelta(names.slice(60), [], false);
  b.applyDelta([...names].reverse(), [], true);
  assert.ok(a.names === b.names, 'one set for both');
  a.applyDelta([], ['cluster-7'], false);
  assert.ok(a.names !== b.names && b.names.has('cluster-7'), 'an unsubscribe is not seen by the other');
  assert.is(a.names.size, 99);
  b.applyDelta([], ['cluster-7'], false);
  assert.ok(a.names === b.names, 'together again');
  const before = a.names;
  a.applyDelta([], ['not-subscribed'], false);
  assert.ok(a.names === before, 'no change, nothing made');
});

test.run();
