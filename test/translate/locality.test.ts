/**
 * Failover by distance, the computation: for each caller key, the priorities of a service's
 * localities by how many leading levels (region, zone, sub-zone) they share with the caller;
 * callers pick the longest key that exists; weights apply to the first entry that names a
 * locality. Table-driven: each row a set of endpoint localities, a caller, and what it is served.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { callerKeys, failoverVariants, weighLocalities } from '../../src/features/locality/translate.ts';

type Place = [region: string, zone?: string, subZone?: string];

function cla(places: Place[]) {
  return {
    cluster_name: 's',
    endpoints: places.map(([region, zone, subZone], i) => ({
      locality: { region, ...(zone && { zone }), ...(subZone && { sub_zone: subZone }) },
      lb_endpoints: [{ endpoint: { address: { socket_address: { address: `10.0.0.${i + 1}`, port_value: 80 } } } }],
      load_balancing_weight: 1,
    })),
  };
}

/** The caller's assignment: endpoint address -> priority (the base when no variant applies). */
function servedTo(places: Place[], caller: Place): Record<string, number> {
  const base = cla(places);
  const variants = failoverVariants(base);
  const [region, zone = '', subZone = ''] = caller;
  const key = callerKeys({ region, zone, subZone }).find((k) => variants.has(k));
  const served = (key ? variants.get(key)! : base) as ReturnType<typeof cla>;
  const out: Record<string, number> = {};
  for (const e of served.endpoints as { lb_endpoints: any[]; priority?: number }[])
    out[e.lb_endpoints[0].endpoint.address.socket_address.address] = e.priority ?? 0;
  return out;
}

const TWO_ZONES: Place[] = [
  ['r', 'a'],
  ['r', 'a'],
  ['r', 'b'],
];
const RACKS: Place[] = [
  ['r', 'a', 'x'],
  ['r', 'a', 'y'],
  ['r', 'b'],
  ['far', 'c'],
];

const CASES: { name: string; places: Place[]; caller: Place; want: Record<string, number> }[] = [
  {
    name: 'own zone first',
    places: TWO_ZONES,
    caller: ['r', 'a'],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 1 },
  },
  {
    name: 'the other zone',
    places: TWO_ZONES,
    caller: ['r', 'b'],
    want: { '10.0.0.1': 1, '10.0.0.2': 1, '10.0.0.3': 0 },
  },
  {
    name: 'a zone without endpoints: all one distance',
    places: TWO_ZONES,
    caller: ['r', 'z'],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 0 },
  },
  {
    name: 'no locality: the base',
    places: TWO_ZONES,
    caller: [''],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 0 },
  },
  {
    name: 'sub-zone, zone, region, the rest',
    places: RACKS,
    caller: ['r', 'a', 'y'],
    want: { '10.0.0.1': 1, '10.0.0.2': 0, '10.0.0.3': 2, '10.0.0.4': 3 },
  },
  {
    name: 'a zone, any rack',
    places: RACKS,
    caller: ['r', 'a'],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 1, '10.0.0.4': 2 },
  },
  {
    name: 'an unknown rack of a known zone',
    places: RACKS,
    caller: ['r', 'a', 'q'],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 1, '10.0.0.4': 2 },
  },
  {
    name: 'a region known only by name',
    places: RACKS,
    caller: ['r', 'elsewhere'],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 0, '10.0.0.4': 1 },
  },
  {
    name: 'the far region',
    places: RACKS,
    caller: ['far', 'c'],
    want: { '10.0.0.1': 1, '10.0.0.2': 1, '10.0.0.3': 1, '10.0.0.4': 0 },
  },
  {
    name: 'an unknown region: all one distance',
    places: RACKS,
    caller: ['moon'],
    want: { '10.0.0.1': 0, '10.0.0.2': 0, '10.0.0.3': 0, '10.0.0.4': 0 },
  },
];

for (const c of CASES)
  test(`failover: ${c.name}`, () => {
    assert.equal(servedTo(c.places, c.caller), c.want);
  });

test('variants: one per locality prefix that changes the order, none where all endpoints are one distance', () => {
  assert.equal([...failoverVariants(cla(TWO_ZONES)).keys()].sort(), ['["r","a"]', '["r","b"]']);
  assert.equal(
    failoverVariants(
      cla([
        ['r', 'a'],
        ['r', 'a'],
      ]),
    ).size,
    0,
  );
  assert.equal(failoverVariants({ cluster_name: 's' }).size, 0);
});

test('priorities are numbered from 0 without gaps, nearest first', () => {
  const v = failoverVariants(cla(RACKS)).get('["far","c"]')!;
  assert.equal(
    (v.endpoints as { priority?: number }[]).map((e) => e.priority ?? 0),
    [0, 1, 1, 1],
  );
});

test('weights: the first entry that names a locality wins; others get 1', () => {
  const s = {
    locality: {
      weights: [
        { zone: 'a', subZone: 'x', weight: 5 },
        { zone: 'a', weight: 3 },
        { region: 'far', weight: 7 },
      ],
    },
  };
  const out = weighLocalities(s, cla(RACKS));
  assert.equal(
    (out.endpoints as { load_balancing_weight: number }[]).map((e) => e.load_balancing_weight),
    [5, 3, 1, 7],
  );
});

test.run();
