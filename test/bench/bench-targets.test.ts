/** The benchmark's closing table: each target read from the figures a run recorded, judged against its limit. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  CLIENT_SHAPES,
  figureKey,
  judge,
  PEER_DOUBLE,
  PEER_POINTS,
  record,
  TARGETS,
  type ClientShape,
  type TargetRow,
} from '../../bench/lib/targets.ts';

const peerKey = (point: readonly [number, number], server: string, client: ClientShape = 'batching') =>
  figureKey.peers(point, server, client);

const [first, second] = PEER_POINTS as [readonly [number, number], readonly [number, number]];

/** Figures as the scenarios record them: `record(figures, prefix, row)`. */
function figures(rows: [prefix: string, row: object][]): Map<string, number> {
  const f = new Map<string, number>();
  for (const [prefix, row] of rows) record(f, prefix, row);
  return f;
}

function row(rows: TargetRow[], text: string): TargetRow {
  const found = rows.filter((r) => r.target === text);
  assert.is(found.length, 1, `one target reads "${text}"`);
  return found[0]!;
}

test('record keeps the finite numbers of a row, each under its prefix', () => {
  const f = figures([['peers.100x5000.fleetxds', { server: 'fleetxds', routeP99: 170, routeLoopMs: NaN, n: 5000 }]]);
  assert.equal(
    [...f],
    [
      ['peers.100x5000.fleetxds.routeP99', 170],
      ['peers.100x5000.fleetxds.n', 5000],
    ],
  );
});

test('with nothing measured, every target says which scenario measures it', () => {
  for (const r of judge(TARGETS, new Map())) {
    assert.is(r.verdict, 'not measured', r.target);
    assert.match(r.fleetxds, /^- \(run `[a-z-]+`\)$/);
    assert.is(r.floor, '-');
  }
});

// Each case: the figures recorded, the target's text, then its verdict and cells.
const CASES: [name: string, recorded: [string, object][], target: string, expect: Partial<TargetRow>][] = [
  [
    'a figure under its limit',
    [[figureKey.pipeline(10_000), { oneRouteApplyMs: 16 }]],
    'one-route edit, 10,000 services: apply after the debounce',
    { verdict: 'met', fleetxds: '16 ms', limit: '<= 20 ms' },
  ],
  [
    'a figure at its limit is met',
    [[figureKey.restart(10_000), { msToFirstResponse: 500 }]],
    'restart to the first ADS answer from SQLite, 10,000 services',
    { verdict: 'met', fleetxds: '500 ms' },
  ],
  [
    'a figure above its limit',
    [[figureKey.pipeline(10_000), { coldTotalMs: 2400 }]],
    'cold start, 10,000 services + 10,000 routes, YAML to encoded snapshot',
    { verdict: 'above', fleetxds: '2400 ms' },
  ],
  [
    'figures of other sizes (--quick) do not count',
    [[figureKey.pipeline(1000), { oneRouteApplyMs: 5 }]],
    'one-route edit, 10,000 services: apply after the debounce',
    { verdict: 'not measured' },
  ],
  [
    'a ratio to the floor of the same run',
    [
      [peerKey(first, 'fleetxds'), { routeCpu: 0.3, routeP99: 190 }],
      [peerKey(first, 'bare-http2'), { routeCpu: 0.25, routeP99: 160 }],
    ],
    'one-route push to 5,000 streams: server CPU / the bare-http2 floor, batching client',
    { verdict: 'met', fleetxds: '1.20x', limit: '<= 1.25x' },
  ],
  [
    'a ratio above its limit',
    [
      [peerKey(first, 'fleetxds'), { routeP99: 190 }],
      [peerKey(first, 'bare-http2'), { routeP99: 160 }],
    ],
    'one-route push to 5,000 streams: p99 / the floor p99, batching client',
    { verdict: 'above', fleetxds: '1.19x' },
  ],
  [
    'a ratio with one side missing is not measured',
    [[peerKey(first, 'fleetxds'), { routeCpu: 0.3 }]],
    'one-route push to 5,000 streams: server CPU / the bare-http2 floor, batching client',
    { verdict: 'not measured' },
  ],
  [
    'twice the streams against the first point',
    [
      [peerKey(PEER_DOUBLE, 'fleetxds'), { stormCpu: 4.4, kbPerStream: 33 }],
      [peerKey(first, 'fleetxds'), { stormCpu: 2.0 }],
      [peerKey(PEER_DOUBLE, 'bare-http2'), { stormCpu: 4.1 }],
      [peerKey(first, 'bare-http2'), { stormCpu: 2.0 }],
    ],
    '10,000 streams against 5,000: reconnect storm server CPU',
    { verdict: 'above', fleetxds: '2.20x', floor: '2.05x', limit: '<= 2.00x' },
  ],
  [
    'memory per stream at twice the streams',
    [
      [peerKey(PEER_DOUBLE, 'fleetxds'), { kbPerStream: 33 }],
      [peerKey(PEER_DOUBLE, 'bare-http2'), { kbPerStream: 42 }],
    ],
    'RSS per idle stream at 10,000 streams',
    { verdict: 'met', fleetxds: '33 KB', floor: '42 KB' },
  ],
  [
    "REST, with the floor's own figure beside it",
    [
      [figureKey.rest(10_000, 'fleetxds'), { rssHeldMB: 271, releaseAllMs: 3014 }],
      [figureKey.rest(10_000, 'bare-http'), { rssHeldMB: 232, releaseAllMs: 2525 }],
    ],
    '10,000 held REST polls: server RSS',
    { verdict: 'above', fleetxds: '271 MB', floor: '232 MB' },
  ],
  [
    "against go-control-plane, with the floor's ratio to it beside (out of reach when the floor misses it too)",
    [
      [peerKey(first, 'fleetxds'), { stormP99: 4800 }],
      [peerKey(first, 'go-control-plane'), { stormP99: 6000 }],
      [peerKey(first, 'bare-http2'), { stormP99: 4900 }],
    ],
    `${first[0].toLocaleString('en-US')} services, ${first[1].toLocaleString('en-US')} streams: reconnect storm p99 / go-control-plane's, batching client`,
    { verdict: 'above', fleetxds: '0.80x', floor: '0.82x', limit: '<= 0.50x' },
  ],
  [
    'each peers point is judged on its own',
    [
      [peerKey(second, 'fleetxds'), { routeCpu: 0.1 }],
      [peerKey(second, 'go-control-plane'), { routeCpu: 1.0 }],
    ],
    `${second[0].toLocaleString('en-US')} services, ${second[1].toLocaleString('en-US')} streams: one-route server CPU / go-control-plane's, batching client`,
    { verdict: 'met', fleetxds: '0.10x', floor: '-' },
  ],
  [
    'each client shape is judged on its own figures',
    [
      [peerKey(first, 'fleetxds', 'trickling'), { routeCpu: 0.4 }],
      [peerKey(first, 'bare-http2', 'trickling'), { routeCpu: 0.2 }],
      [peerKey(first, 'fleetxds'), { routeCpu: 0.2 }],
      [peerKey(first, 'bare-http2'), { routeCpu: 0.2 }],
    ],
    'one-route push to 5,000 streams: server CPU / the bare-http2 floor, trickling client',
    { verdict: 'above', fleetxds: '2.00x' },
  ],
  [
    "an endpoint push against the same server's route push, the floor's ratio beside it",
    [
      [peerKey(first, 'fleetxds', 'trickling'), { routeCpu: 0.2, endpointCpu: 0.18 }],
      [peerKey(first, 'bare-http2', 'trickling'), { routeCpu: 0.2, endpointCpu: 0.15 }],
    ],
    "one-endpoint push to 5,000 streams: server CPU / the one-route push's, trickling client",
    { verdict: 'above', fleetxds: '0.90x', floor: '0.75x', limit: '<= 0.50x' },
  ],
];

for (const [name, recorded, target, expect] of CASES)
  test(`targets: ${name}`, () => {
    const r = row(judge(TARGETS, figures(recorded)), target);
    for (const [k, v] of Object.entries(expect)) assert.is(r[k as keyof TargetRow], v, `${k} of "${target}"`);
  });

test('every target has its own text, and the go-control-plane ones cover both points, every figure and both clients', () => {
  const texts = TARGETS.map((t) => t.text);
  assert.is(new Set(texts).size, texts.length);
  for (const [s, n] of PEER_POINTS)
    for (const client of CLIENT_SHAPES)
      assert.is(
        texts.filter(
          (t) =>
            t.startsWith(`${s.toLocaleString('en-US')} services, ${n.toLocaleString('en-US')} streams:`) &&
            t.endsWith(`, ${client} client`),
        ).length,
        7,
      );
});

test.run();
