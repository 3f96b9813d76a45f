/**
 * fleetxds benchmark suite: `npm run bench` (all), or `npm run bench -- pipeline fanout ...`.
 * Options: --runs N (median of N runs, default 3; fan-out defaults to 1 run per point because one
 * point at 5,000 clients takes about a minute), --changes N (peers and threads: how many one-route
 * and one-endpoint changes each run measures, median; default 5), --client batching|trickling (peers:
 * one fan-out client shape; default both), --quick (smaller sizes). Prints tables; numbers
 * are figures to compare, not pass/fail.
 */
import { execFileSync, spawnSync } from 'node:child_process';

import { parseArgs } from 'node:util';
import { projectPath } from '../src/shared/paths.ts';
import { tempDir } from '../test/helpers/tree.ts';
import { fanout, type FanoutResult } from './scenarios/fanout.ts';
import { filesScenario } from './scenarios/files.ts';
import { buildPushLoop, pushLoop } from './scenarios/push-loop.ts';
import {
  buildGoHarness,
  CHANGES_PER_RUN,
  ONE_CORE,
  peerRun,
  PEERS,
  type PeerName,
  type PeerResult,
} from './scenarios/peers.ts';
import { restScenario, type RestResult } from './scenarios/rest.ts';
import { registrationScenario, type RegistrationResult } from './scenarios/registration.ts';
import { ttlRenewal, type TtlRenewalResult } from './scenarios/ttl-renewal.ts';
import { restartScenario } from './scenarios/restart.ts';
import { localityRun, type LocalityResult } from './scenarios/locality.ts';
import { rolloutCost } from './scenarios/rollout.ts';
import { lifecycle, type LifecycleResult } from './scenarios/lifecycle.ts';
import { machineInfo, median } from './lib/proc.ts';
import { CLIENT_SHAPES, figureKey, judge, PEER_DOUBLE, PEER_POINTS, record, TARGETS } from './lib/targets.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string' },
    changes: { type: 'string' },
    quick: { type: 'boolean', default: false },
    client: { type: 'string' },
  },
});
// `peers`, `grpc-server` and `threads` need Go and the Go module proxy: run them by name.
const all = [
  'pipeline',
  'restart',
  'fanout',
  'push-loop',
  'rollout',
  'rest',
  'registration',
  'locality',
  'ttl',
  'files',
  'envoy-check',
  'lifecycle',
];
const selected = positionals.length ? positionals : all;
const runs = Number(values.runs ?? 3);
const quick = values.quick;
const changes = Number(values.changes ?? CHANGES_PER_RUN);
/** What this run measured, for the closing table of targets. */
const figures = new Map<string, number>();

function table(title: string, rows: Record<string, unknown>[]): void {
  console.log(`\n## ${title}\n`);
  if (!rows.length) return;
  const cols = Object.keys(rows[0] ?? {});
  console.log(`| ${cols.join(' | ')} |`);
  console.log(`|${cols.map(() => '---').join('|')}|`);
  // A figure a server does not report (NaN) shows as '-'.
  const cell = (v: unknown) => (typeof v === 'number' && Number.isNaN(v) ? '-' : String(v));
  for (const r of rows) console.log(`| ${cols.map((c) => cell(r[c])).join(' | ')} |`);
}

/** A row of a / b for each column of `a`, except the columns `label` gives (the server, the sizes). */
function ratioRow(
  label: Record<string, unknown>,
  a: Record<string, unknown>,
  b: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...label };
  for (const k of Object.keys(a)) {
    const ratio = Number(a[k]) / Number(b[k]);
    if (!(k in out)) out[k] = Number.isFinite(ratio) ? ratio.toFixed(2) : '-';
  }
  return out;
}

function medianOf<T extends Record<string, unknown>>(results: T[]): T {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(results[0] ?? {})) {
    const vals = results.map((r) => r[k]);
    out[k] = typeof vals[0] === 'number' ? median(vals as number[]) : vals[0];
  }
  return out as T;
}

/** The median of peers runs, figure by figure (the split by thread is summed up apart: splitColumns). */
function medianOfRuns(results: readonly PeerResult[]): Omit<PeerResult, 'threads' | 'spread'> {
  return medianOf(results.map(({ threads: _, spread: _s, ...measured }) => measured));
}

const SCENARIOS = ['route', 'endpoint', 'storm'] as const;

/** Per scenario, the median split by thread of several runs: `main / serving... / helpers`, and `longest`. */
function splitColumns(splits: readonly NonNullable<PeerResult['threads']>[]): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const k of SCENARIOS) {
    const s = splits.map((x) => x[k]);
    const serving = s[0]!.serving.map((_, i) => median(s.map((x) => x.serving[i] ?? 0)));
    out[k] = [median(s.map((x) => x.main)), ...serving, median(s.map((x) => x.helpers))].join(' / ');
    out[`${k}Longest`] = median(s.map((x) => x.longest));
  }
  return out;
}

console.log(
  `# fleetxds benchmarks\n\nmachine: ${machineInfo()}; runs per point: ${runs} (fan-out: ${values.runs ?? 1})`,
);
execFileSync('npm', ['run', 'build', '--silent'], { cwd: projectPath(), stdio: 'inherit' });

let lastDb: { database: string; configDir: string } | undefined;
if (selected.includes('pipeline') || selected.includes('restart')) {
  const rows: Record<string, unknown>[] = [];
  for (const n of quick ? [1000] : [1000, 10_000]) {
    const results: Record<string, number | string>[] = [];
    for (let r = 0; r < (selected.includes('pipeline') ? runs : 1); r++) {
      const dir = tempDir('fleetxds-bench-');
      const out = spawnSync(
        process.execPath,
        ['--import', 'tsx', projectPath('bench', 'scenarios', 'pipeline.ts'), String(n), dir],
        { encoding: 'utf8', maxBuffer: 1 << 24 },
      );
      if (out.status !== 0) throw new Error(out.stderr);
      results.push(JSON.parse(out.stdout.trim().split('\n').pop()!));
    }
    const m = medianOf(results);
    lastDb = {
      database: String(results[results.length - 1]!.database),
      configDir: String(results[results.length - 1]!.configDir),
    };
    const { database: _d, configDir: _c, ...row } = m;
    record(figures, figureKey.pipeline(n), row);
    rows.push(row);
  }
  if (selected.includes('pipeline')) {
    table(
      'Pipeline: read + parse, validate, translate + encode (cold); one-file change to new snapshot (incl. 50 ms ' +
        'debounce); peak RSS',
      rows,
    );
    // The same with the HTTP features on every route and listener, beside the plain tree's figures.
    const n = quick ? 1000 : 10_000;
    const featured: Record<string, number | string>[] = [];
    for (let r = 0; r < runs; r++) {
      const out = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          projectPath('bench', 'scenarios', 'pipeline.ts'),
          String(n),
          tempDir('fleetxds-bench-'),
          'features',
        ],
        { encoding: 'utf8', maxBuffer: 1 << 24 },
      );
      if (out.status !== 0) throw new Error(out.stderr);
      featured.push(JSON.parse(out.stdout.trim().split('\n').pop()!));
    }
    const { database: _d, configDir: _c, ...row } = medianOf(featured);
    const plain = rows.find((x) => x.services === n) ?? {};
    table(
      `Pipeline, ${n.toLocaleString('en')} services, plain tree beside one with hashPolicy, header edits, ` +
        'mirroring, a regex rewrite and retries with backoff on every route; an access log, connection settings, ' +
        'compression and tracing on the listener; access rules, JWT, external authorization, local and global ' +
        'rate limits on the listener and, with CORS, on every virtual host; and a node group of gRPC applications ' +
        '(a gRPC service with retries, affinity and faults, an aggregate and an xDS server with access rules per ' +
        '100 services)',
      [
        { tree: 'plain', ...plain },
        { tree: 'features', ...row },
      ],
    );
  }
}

if (selected.includes('restart') && lastDb) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await restartScenario(lastDb.configDir, lastDb.database));
  const row = medianOf(results);
  record(figures, figureKey.restart(quick ? 1000 : 10_000), row);
  table(`Restart: process start to first ADS response from SQLite (${quick ? '1,000' : '10,000'} services)`, [row]);
}

if (selected.includes('fanout')) {
  const rows: FanoutResult[] = [];
  const fanRuns = Number(values.runs ?? 1);
  for (const n of quick ? [1000] : [1000, 5000]) {
    for (const mode of ['sotw', 'delta'] as const) {
      const results: FanoutResult[] = [];
      for (let r = 0; r < fanRuns; r++) results.push(await fanout(n, mode));
      rows.push(medianOf(results as unknown as Record<string, unknown>[]) as unknown as FanoutResult);
    }
  }
  table(
    'Fan-out: one-route change to all N ADS clients holding it (ms, incl. 50 ms debounce); server CPU s and RSS ' +
      'MB; bytes per client; then a runtime value (RTDS) and a token-policy edit (ECDS) for every group: p99 ms and ' +
      'server CPU s',
    rows as unknown as Record<string, unknown>[],
  );
  for (const row of rows.filter((r) => r.n === 5000 && r.mode === 'sotw'))
    table(
      'A runtime change and a token-policy edit (ECDS) beside a one-route change, 5,000 SotW ADS streams ' +
        '(targets: at most 1.0x)',
      [
        {
          runtimeCpu: `${(row.runtimeCpuSeconds / row.serverCpuSeconds).toFixed(2)}x`,
          runtimeP99: `${(row.runtimeP99 / row.p99).toFixed(2)}x`,
          policyCpu: `${(row.policyCpuSeconds / row.serverCpuSeconds).toFixed(2)}x`,
          policyP99: `${(row.policyP99 / row.p99).toFixed(2)}x`,
        },
      ],
    );
}

if (selected.includes('rollout')) {
  const results = [];
  for (let r = 0; r < Math.min(runs, 3); r++) results.push(await rolloutCost(1000));
  table(
    'Staged rollout, 1,000 ADS streams (half canary): server CPU s and p99 ms for a one-route change served to all, ' +
      'the same change as a rollout to the canary, its promotion to the rest; RSS MB before and during',
    [medianOf(results as unknown as Record<string, unknown>[])],
  );
}

if (selected.includes('rest')) {
  const results: RestResult[][] = [];
  const polls = quick ? 2000 : 10_000;
  for (let r = 0; r < Math.min(runs, 2); r++) results.push(await restScenario(polls));
  const rows = [0, 1].map((i) => medianOf(results.map((r) => r[i]!)));
  for (const row of rows) record(figures, figureKey.rest(polls, row.server), row);
  const [ours, floor] = rows as [RestResult, RestResult];
  table(
    'REST long-poll, server on one core, client on the other: server RSS idle / held, KB per held poll, time ' +
      'from the change until all are answered (fleetxds: from the file write, incl. debounce) and server CPU s ' +
      'for it; the floor is bare node:http holding the same polls and answering with the same bytes',
    [...rows, ratioRow({ server: 'fleetxds / bare-http', held: ours.held }, ours, floor)],
  );
}

if (selected.includes('registration')) {
  const services = quick ? 100 : 1000;
  const results: RegistrationResult[] = [];
  for (let r = 0; r < Math.min(runs, 2); r++)
    results.push(await registrationScenario(services, 10, quick ? 200 : 1000));
  const row = medianOf(results as unknown as Record<string, unknown>[]) as unknown as RegistrationResult;
  record(figures, figureKey.registration(row.endpoints), row);
  table(
    'Registered endpoints, server on one core: heartbeats every 10 s over keep-alive HTTP (server CPU %, pushes ' +
      'meanwhile), then 1% changing health at once (ms until every ADS stream has ACKed it, p50 / p99)',
    [row as unknown as Record<string, unknown>],
  );
}

if (selected.includes('locality')) {
  const [services, streams] = quick ? [100, 1000] : [1000, 5000];
  const rows: LocalityResult[] = [];
  for (const locality of [false, true]) {
    const results: LocalityResult[] = [];
    for (let r = 0; r < Math.min(runs, 2); r++) results.push(await localityRun(services, streams, locality));
    const row = medianOf(results as unknown as Record<string, unknown>[]) as unknown as LocalityResult;
    record(figures, figureKey.locality(services, streams, row.locality), row);
    rows.push(row);
  }
  table(
    `Failover by distance: ${services} services with endpoints in 3 zones, ${streams} SotW ADS streams spread ` +
      'over them; one endpoint of one service moves (ms until every stream ACKed it, p99; server CPU s; RSS MB)',
    [
      ...(rows as unknown as Record<string, unknown>[]),
      ratioRow(
        { locality: 'failover / none', services, streams },
        rows[1] as unknown as Record<string, unknown>,
        rows[0] as unknown as Record<string, unknown>,
      ),
    ],
  );
}

if (selected.includes('ttl')) {
  const streams = quick ? 1000 : 5000;
  const rows: TtlRenewalResult[] = [];
  for (const mode of ['sotw', 'delta'] as const) {
    const row = await ttlRenewal(streams, mode, 1000, 30_000, quick ? 30_000 : 60_000);
    record(figures, figureKey.ttl(streams, mode), row);
    rows.push(row);
  }
  table(
    `Overrides at rest: ${streams} ADS streams hold a 1,000-value overrides layer with a 30 s TTL, renewed every ` +
      '10 s (SotW: the layer again; delta: a heartbeat); server CPU over the window with the streams idle, then ' +
      'renewing, and the difference, percent of one core',
    rows as unknown as Record<string, unknown>[],
  );
}

if (selected.includes('lifecycle')) {
  const rows: LifecycleResult[] = [];
  for (const path of ['api', 'file'] as const)
    for (const routes of quick ? [1000] : [1000, 3000])
      rows.push(await lifecycle(routes, quick || path === 'file' ? 200 : 1000, path));
  table(
    'Edit to first 200 through Envoy 1.40: a route added to a virtual host of N routes, from the file renamed ' +
      'into place (api: and `fleetxds apply` asked; file: the watcher left to apply it, 200 changes) to the first ' +
      '200 on it; apply: until the call answered; errors: non-200 answers on existing routes meanwhile (targets: ' +
      'api mean <= 10 ms, p99 <= 20 ms at 1,000 routes, at 3,000 at most twice that; file: the debounce + 20 ms; ' +
      '0 errors)',
    rows as unknown as Record<string, unknown>[],
  );
}

if (selected.includes('push-loop')) {
  await buildPushLoop();
  // Many streams of a small config, then fewer of a larger one, where a walk of every subscribed name shows.
  const points: [protocol: 'sotw' | 'delta', services: number, streams: number][] = [
    ['sotw', 100, quick ? 1000 : 5000],
    ['delta', 100, quick ? 1000 : 5000],
    ['sotw', 1000, 1000],
    ['delta', 1000, 1000],
  ];
  const rows = points.map(([protocol, services, streams]) =>
    medianOf(Array.from({ length: runs }, () => pushLoop(protocol, services, streams, 9))),
  );
  table(
    "fleetxds's own work per ADS stream, in process without sockets (median of 9 changes per run): the publish " +
      'loop (deciding what each stream is owed and handing it its bytes), the decoding of its ACK and its ' +
      'handling, us; the JS heap each stream holds once up to date, KB',
    rows,
  );
}

if (selected.includes('files')) {
  const results = [];
  for (let r = 0; r < runs; r++) results.push(await filesScenario(quick ? 20 : 100, 100));
  table('Files: render all types for every group, then a one-route change', [medianOf(results)]);
}

if (selected.includes('envoy-check')) {
  execFileSync('bash', [projectPath('test', 'envoy', 'install.sh')], { stdio: 'inherit' });
  const rows: Record<string, unknown>[] = [];
  for (const releases of [['1.40'], ['1.40', '1.36']]) {
    const binaries = releases.map((v) => projectPath('.envoy', v, 'bin', 'envoy'));
    const out = spawnSync(
      process.execPath,
      ['--import', 'tsx', projectPath('bench', 'scenarios', 'envoy-check.ts'), tempDir('fleetxds-bench-'), ...binaries],
      { encoding: 'utf8' },
    );
    if (out.status !== 0) throw new Error(out.stderr);
    for (const line of out.stdout.trim().split('\n')) rows.push(JSON.parse(line));
  }
  table(
    'Envoy pre-check (envoyCheck.binaries): `envoy --mode validate` per node group, ms (checkTree without it for ' +
      'scale)',
    rows,
  );
}

if (selected.includes('threads')) {
  // Serving threads (grpc.threads): fleetxds on 1, 2, 4 ... cores up to FLEETXDS_BENCH_SERVER_CORES
  // (default 2) with as many serving threads, the Go client on FLEETXDS_BENCH_CLIENT_CORES (default
  // core 1). On the 2-core VM the client shares core 1 with the second serving thread; on a larger
  // VM give the client cores of its own, e.g. SERVER_CORES=4 CLIENT_CORES=4,5,6,7.
  const bin = buildGoHarness();
  const threadRuns = Number(values.runs ?? 1);
  const serverCores = Number(process.env.FLEETXDS_BENCH_SERVER_CORES ?? 2);
  const clientCores = process.env.FLEETXDS_BENCH_CLIENT_CORES ?? '1';
  const layouts = [1, 2, 4, 8, 16, 32]
    .filter((k) => k <= serverCores)
    .map((k) => ({
      label: k > 1 ? `${k} threads, cores 0-${k - 1}` : '1 thread, core 0',
      threads: k,
      cores: Array.from({ length: k }, (_, i) => i).join(','),
      clientCores,
    }));
  const [services, n] = quick ? [100, 1000] : [100, 3000];
  const rows: Record<string, unknown>[] = [];
  const byThread: Record<string, unknown>[] = [];
  for (const l of layouts) {
    const runs: PeerResult[] = [];
    for (let r = 0; r < threadRuns; r++) runs.push(await peerRun('fleetxds', n, services, bin, l, changes));
    rows.push({ layout: l.label, ...medianOfRuns(runs) });
    byThread.push({ layout: l.label, ...splitColumns(runs.map((r) => r.threads!)) });
  }
  // Each layout against one thread on one core: above 1 is a gain.
  const gains = rows.slice(1).map((row) => {
    const gain: Record<string, unknown> = {};
    for (const k of Object.keys(rows[0]!)) {
      const [a, b] = [Number(rows[0]![k]), Number(row[k])];
      gain[k] =
        k === 'layout'
          ? `one / ${row.layout}`
          : Number.isFinite(a / b) && k !== 'services' && k !== 'n'
            ? (a / b).toFixed(2)
            : '';
    }
    return gain;
  });
  table(
    `Serving threads, ${services} services, ${n} SotW ADS streams, Go client on cores ${clientCores} (median of ` +
      `${threadRuns}): p99 ms, server CPU s (all threads)`,
    [...rows, ...gains],
  );
  // Where the CPU went, by thread. The longest JavaScript thread bounds a push where every thread
  // has a core of its own: its ratio to one thread's is the gain that a VM with free cores can show,
  // measured here even where the client shares a core.
  table(
    `Serving threads by thread (median of ${threadRuns}): CPU s of the main thread / each serving thread / V8's ` +
      `helpers; longest: the busiest JavaScript thread`,
    [
      ...byThread,
      ...byThread
        .slice(1)
        .map((row) =>
          ratioRow(
            { layout: `one / ${row.layout}: longest`, ...Object.fromEntries(SCENARIOS.map((k) => [k, ''])) },
            byThread[0]!,
            row,
          ),
        ),
    ],
  );
}

if (selected.includes('peers')) {
  const bin = buildGoHarness();
  const peerRuns = Number(values.runs ?? 1);
  const points = quick ? [[100, 1000] as const] : PEER_POINTS;
  // --client batching|trickling: one client shape only (default: both).
  for (const shape of CLIENT_SHAPES.filter((c) => !values.client || c === values.client)) {
    const by = shape === 'batching' ? 'the Go client, batching' : 'the grpc-js client, trickling';
    for (const [point, [services, n]] of points.entries()) {
      const results = new Map<PeerName, PeerResult[]>(PEERS.map((p) => [p, []]));
      for (let r = 0; r < peerRuns; r++) {
        // Rotate the order by run and by point, so no server always runs first (right after the
        // build, or on a warmer machine), even with --runs 1.
        const order = PEERS.map((_, i) => PEERS[(i + r + point) % PEERS.length]!);
        for (const name of order)
          results.get(name)!.push(await peerRun(name, n, services, bin, ONE_CORE, changes, shape));
      }
      const rows = PEERS.map((p) => medianOfRuns(results.get(p)!));
      for (const row of rows) record(figures, figureKey.peers([services, n], row.server, shape), row);
      const spread = PEERS.map((p) => ({
        server: p,
        ...Object.fromEntries(
          (['routeP99', 'routeCpu', 'endpointP99', 'endpointCpu', 'stormP99', 'stormCpu'] as const).map((k) => [
            k,
            results
              .get(p)!
              .map((x) => x[k])
              .join(' / '),
          ]),
        ),
      }));
      table(
        `Peers, ${services} services, ${n} SotW ADS streams, server on one core, ${by} on the other (median ` +
          `of ${peerRuns} run(s); route and endpoint: median of ${changes} changes per run): p99 ms, server CPU ` +
          's, bytes per stream, KB RSS per stream; ratios below',
        [
          ...rows,
          ratioRow({ server: 'fleetxds / go-control-plane', client: shape, services, n }, rows[0]!, rows[1]!),
          ratioRow({ server: 'fleetxds / bare-http2', client: shape, services, n }, rows[0]!, rows[2]!),
        ],
      );
      if (peerRuns > 1) table(`Peers, ${by}: every run (spread)`, spread);
      // Within each run: the lowest and highest of the changes each median above is taken from.
      table(
        `Peers, ${services} services, ${n} streams, ${by}: spread of the ${changes} changes (lowest-highest, per run)`,
        PEERS.flatMap((p) => results.get(p)!.map((r, i) => ({ server: p, run: i + 1, ...r.spread }))),
      );
    }
    if (!quick && shape === 'batching') {
      // fleetxds and the floor at twice the streams of the first point: what doubling the fleet
      // costs (with the batching client only: bench/lib/targets.ts, atTwiceTheStreams).
      const [services, n] = PEER_DOUBLE;
      const rows = [];
      for (const name of ['fleetxds', 'bare-http2'] as const) {
        const each: PeerResult[] = [];
        for (let r = 0; r < peerRuns; r++) each.push(await peerRun(name, n, services, bin, ONE_CORE, changes, shape));
        const row = medianOfRuns(each);
        record(figures, figureKey.peers(PEER_DOUBLE, name, shape), row);
        rows.push(row);
      }
      table(`Peers, ${services} services, ${n} SotW ADS streams, ${by} (median of ${peerRuns} run(s))`, rows);
    }
  }
}

if (selected.includes('grpc-server')) {
  // fleetxds over its own node:http2 gRPC server and over grpc-js's, with both client shapes: the
  // figures the choice of gRPC server is made on (docs/architecture.md).
  const bin = buildGoHarness();
  const peerRuns = Number(values.runs ?? 1);
  const servers = ['fleetxds', 'fleetxds-grpc-js'] as const;
  for (const shape of CLIENT_SHAPES.filter((c) => !values.client || c === values.client))
    for (const [point, [services, n]] of (quick ? [[100, 1000] as const] : PEER_POINTS).entries()) {
      const results = new Map<PeerName, PeerResult[]>(servers.map((p) => [p, []]));
      for (let r = 0; r < peerRuns; r++)
        for (const name of r % 2 === point % 2 ? servers : [...servers].reverse())
          results.get(name)!.push(await peerRun(name, n, services, bin, ONE_CORE, changes, shape));
      const [own, lib] = servers.map((p) => medianOfRuns(results.get(p)!));
      table(
        `gRPC server: node:http2 (fleetxds) against grpc-js, ${services} services, ${n} SotW ADS streams, ` +
          `${shape} client (median of ${peerRuns} run(s), ${changes} changes each): p99 ms, server CPU s, ` +
          'KB RSS per stream',
        [own!, lib!, ratioRow({ server: 'node:http2 / grpc-js', client: shape, services, n }, own!, lib!)],
      );
    }
}

// Every target beside its figure; a target whose scenario did not run here says which to run.
table(
  'Against the targets (the floor: the same figure for the bare server of this machine, where the run measured one)',
  judge(TARGETS, figures),
);
