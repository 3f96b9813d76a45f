/**
 * Soak test (loopback only, bounded): for `--minutes` (default 10), 1,000 ADS streams at a time
 * (two client processes) connect, subscribe, ACK and disconnect in waves, while the config changes
 * every 3 s; 2% of the streams NACK every cluster set, 1% stop reading. Clients without
 * credentials poll over REST with a Host and a node id of their own each (and report no version
 * after it: REST's NACK), and claim canary node ids of the rollout under way to NACK it. The
 * server's RSS, open file descriptors, registered streams and database are sampled throughout.
 * Registrations flood in with and without the service's token, gRPC calls start messages they never
 * finish, gzip requests inflate to 16 MB, and every 30 s an Envoy patch that doubles a resource
 * per operation is written into the tree. After the load stops they must return to baseline within
 * the stated bounds, the status API must show no stale node, the NACK log must be within its
 * retention, the rollout must not have been halted by the forged NACKs, the audit log must hold no
 * unauthenticated call, every patch bomb must have been refused, and /healthz must have answered
 * within HEALTHZ_BOUND_MS throughout. Last, the property tests of the parsers of untrusted bytes
 * run with 20,000 cases each and a fresh seed (printed).
 *   npm run soak [-- --minutes 10]
 * Exits 1 when a bound is missed.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { projectPath } from '../src/shared/paths.ts';
import { vhostYaml } from './lib/generate.ts';
import { hostileCounts, type HostileCounts } from './lib/hostile-counts.ts';
import { benchServer } from './lib/server.ts';
import { machineInfo, procStats, sleep } from './lib/proc.ts';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '10' } } });
const seconds = Math.round(Number(values.minutes) * 60);
/** Bounds after the load stops (stated here and in the README). */
const SETTLE_MS = 120_000;
const RSS_BOUND_MB = 96;
const FD_BOUND = 8;
const HEALTHZ_BOUND_MS = 1000;
const REGISTRATION_TOKEN = 'soak-registration-token';

// REST response bodies kept for reuse are bounded (rest.maxCachedBytes, per type and version) and
// held until the next change: set small here, so that the RSS bound after the load measures leaks
// rather than that cache, which the hostile pollers fill.
const { server, cfg, database } = await benchServer(
  100,
  'rest: { listen: 127.0.0.1:0, holdMs: 0, pollerExpiryMs: 5000, maxCachedBytes: 8388608 }\n',
  '{ listen: 127.0.0.1:0, maxBehindMs: 20000 }',
);
/** The NACK log's row bound (retention.nacks.rows default) and what the database may grow by. */
const NACK_ROWS_BOUND = 10_000 + 64;
const DB_GROWTH_BOUND_MB = 64;
// A rollout whose canary stage only forged clients claim: it must stay progressing.
writeFileSync(
  join(cfg, 'rollout.yaml'),
  'kind: Rollout\nname: soak\nstages:\n  - name: canary\n    select: { idPattern: "canary-*" }\n' +
    '    gates: { soak: 1h }\n',
);
// A service VMs register into; the hostile client floods it with and without the token.
writeFileSync(
  join(cfg, 'soak-registered.yaml'),
  'kind: Service\nname: soak-registered\nendpoints: [{ address: 10.255.0.1:8080 }]\n' +
    `registration: { tokens: ["${createHash('sha256').update(REGISTRATION_TOKEN).digest('hex')}"], ttl: 1h }\n`,
);
const dbMB = () =>
  statSync(database).size / 1e6 + (existsSync(`${database}-wal`) ? statSync(`${database}-wal`).size / 1e6 : 0);
const pid = server.child.pid!;
const fds = () => readdirSync(`/proc/${pid}/fd`).length;
const streams = async () => (await server.admin('/api/v1/transports')).grpc.streams as number;
const sample = async () => ({ rssMB: Math.round(procStats(pid).rssMB), fds: fds(), streams: await streams() });

await sleep(2000);
const baseline = await sample();
const baselineDbMB = dbMB();
console.log(`# fleetxds soak: ${values.minutes} min, 1,000 streams per wave\n\nmachine: ${machineInfo()}\n`);
console.log(`baseline: RSS ${baseline.rssMB} MB, ${baseline.fds} fds, ${baseline.streams} streams`);

const children: ChildProcess[] = [0, 1].map((p) =>
  fork(
    projectPath('bench', 'lib', 'soak-client.ts'),
    [String(server.grpcPort), '500', '20', String(seconds), `soak${p}`],
    {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  ),
);
const hostile = fork(
  projectPath('bench', 'lib', 'soak-hostile.ts'),
  [String(server.restPort), String(server.grpcPort), String(seconds), REGISTRATION_TOKEN],
  { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
);
children.push(hostile);
let forged = hostileCounts();
hostile.on('message', (m: { type: string } & HostileCounts) => {
  if (m.type === 'hostile') forged = m;
});
let waves = 0;
let done = 0;
for (const c of children)
  c.on('message', (m: { type: string }) => {
    if (m.type === 'wave') waves++;
    if (m.type === 'done') done++;
  });

let edits = 0;
let bombs = 0;
const BOMB_PATCH =
  'kind: EnvoyPatch\nname: soak-bomb\ntarget: { kind: cluster, name: svc-0 }\njsonPatch:\n' +
  Array.from({ length: 30 }, (_, i) => `  - { op: copy, from: "", path: /x${i} }\n`).join('');
const changer = setInterval(() => {
  edits++;
  // Every tenth edit carries a patch bomb: refused; the next edit removes it.
  if (edits % 10 === 0) {
    bombs++;
    writeFileSync(join(cfg, 'soak-bomb.yaml'), BOMB_PATCH);
  } else if (existsSync(join(cfg, 'soak-bomb.yaml'))) rmSync(join(cfg, 'soak-bomb.yaml'));
  writeFileSync(join(cfg, 'routes', 'vh-0.yaml'), vhostYaml(0, 100, 100).replace('/api/r7/', `/api/r7-${edits}/`));
}, 3000);
let slowestHealthzMs = 0;
const healthz = setInterval(() => {
  const t = performance.now();
  void fetch(`http://127.0.0.1:${server.adminPort}/healthz`)
    .then(() => (slowestHealthzMs = Math.max(slowestHealthzMs, performance.now() - t)))
    .catch(() => (slowestHealthzMs = Infinity));
}, 500);
const peak = { rssMB: 0, fds: 0, streams: 0 };
const t0 = Date.now();
while (done < children.length) {
  await sleep(5000);
  const s = await sample();
  peak.rssMB = Math.max(peak.rssMB, s.rssMB);
  peak.fds = Math.max(peak.fds, s.fds);
  peak.streams = Math.max(peak.streams, s.streams);
  if ((Date.now() - t0) % 60_000 < 5000)
    console.log(`t+${Math.round((Date.now() - t0) / 1000)} s: RSS ${s.rssMB} MB, ${s.fds} fds, ${s.streams} streams`);
}
clearInterval(changer);
clearInterval(healthz);
for (const c of children) c.kill('SIGKILL');
const stoppedAt = Date.now();

// Settle: streams back to zero, fds and RSS back near the baseline.
let after = await sample();
while (Date.now() - stoppedAt < SETTLE_MS) {
  after = await sample();
  const shown = ((await server.admin('/api/v1/status')) as { nodes: unknown[] }).nodes.length;
  if (
    after.streams === 0 &&
    shown === 0 &&
    after.fds <= baseline.fds + FD_BOUND &&
    after.rssMB <= baseline.rssMB + RSS_BOUND_MB
  )
    break;
  if ((Date.now() - stoppedAt) % 10_000 < 1000) console.log(`settling: RSS ${after.rssMB} MB, ${after.fds} fds`);
  await sleep(1000);
}
const settledMs = Date.now() - stoppedAt;
const status = await server.admin('/api/v1/status');
const nodes = await server.admin('/api/v1/nodes?limit=10');
const staleNodes = status.nodes.length;
const behind = status.rollout.reduce((n: number, r: { behind: number }) => n + r.behind, 0);
const rollout = ((await server.admin('/api/v1/rollout')) as { rollout: { status: string } | null }).rollout;
const db = new Database(database, { readonly: true });
const nackRows = (db.prepare('SELECT count(*) AS n FROM nack_events').get() as { n: number }).n;
const anonymousAudit = (
  db.prepare("SELECT count(*) AS n FROM audit_log WHERE actor IN ('anonymous', 'token')").get() as { n: number }
).n;
const registered = (
  db.prepare("SELECT count(*) AS n FROM registrations WHERE service = 'soak-registered'").get() as { n: number }
).n;
const bombsRefused = (
  db
    .prepare(
      'SELECT count(*) AS n FROM rejected_trees ' +
        "WHERE diagnostics_json LIKE '%soak-bomb%' AND diagnostics_json LIKE '%bytes to the resource%'",
    )
    .get() as { n: number }
).n;
db.close();
const grownMB = dbMB() - baselineDbMB;
await server.stop('SIGKILL');

const rows = [
  ['', 'RSS MB', 'fds', 'streams'],
  ['baseline', baseline.rssMB, baseline.fds, baseline.streams],
  ['peak during', peak.rssMB, peak.fds, peak.streams],
  [`after ${Math.round(settledMs / 1000)} s`, after.rssMB, after.fds, after.streams],
  ['bound after', `≤ baseline + ${RSS_BOUND_MB}`, `≤ baseline + ${FD_BOUND}`, '0'],
];
console.log(`\n${rows.map((r) => `| ${r.join(' | ')} |`).join('\n')}\n`);
console.log(
  `waves: ${waves} (x 500 streams), config edits: ${edits}, status after: ${staleNodes} connected nodes shown, ` +
    `${behind} behind, ${nodes.total.recentlyDisconnected} recently disconnected kept`,
);
console.log(
  `unauthenticated: ${forged.polls} REST polls with a Host and node id each, ${forged.restNacks} REST NACKs, ` +
    `${forged.forgedNacks} forged canary NACKs; NACK log ${nackRows} rows (bound ${NACK_ROWS_BOUND}), ` +
    `database +${grownMB.toFixed(1)} MB (bound ${DB_GROWTH_BOUND_MB}), rollout ${rollout?.status ?? 'none'}`,
);
console.log(
  `registrations: ${forged.unauthenticatedRegistrations} refused without a credential (audit rows from them: ` +
    `${anonymousAudit}), ${forged.registrations} with the token (${registered} kept, bound 10,000); ` +
    `${forged.partialMessages} unfinished 1 MB messages, ${forged.gzipBombs} gzip requests inflating to 16 MB; ` +
    `${bombs} patch bombs written, ${bombsRefused} refusals recorded; ` +
    `slowest /healthz ${Math.round(slowestHealthzMs)} ms (bound ${HEALTHZ_BOUND_MS})`,
);
// The parsers of untrusted bytes, longer than in CI, with a fresh seed.
const seed = Date.now() % 2 ** 31;
const properties = spawnSync(
  process.execPath,
  ['--import', 'tsx', projectPath('test', 'properties', 'untrusted-parsers.test.ts')],
  {
    env: { ...process.env, FLEETXDS_PROPERTY_SEED: String(seed), FLEETXDS_PROPERTY_RUNS: '20000' },
    encoding: 'utf8',
  },
);
console.log(`property tests, 20,000 runs each, seed ${seed}: ${properties.status === 0 ? 'passed' : 'FAILED'}`);
if (properties.status !== 0) console.log(properties.stdout, properties.stderr);
const ok =
  properties.status === 0 &&
  anonymousAudit === 0 &&
  registered <= 10_000 &&
  bombsRefused >= Math.min(bombs, 1) &&
  slowestHealthzMs <= HEALTHZ_BOUND_MS &&
  after.streams === 0 &&
  after.fds <= baseline.fds + FD_BOUND &&
  after.rssMB <= baseline.rssMB + RSS_BOUND_MB &&
  staleNodes === 0 &&
  behind === 0 &&
  nackRows <= NACK_ROWS_BOUND &&
  grownMB <= DB_GROWTH_BOUND_MB &&
  rollout?.status === 'progressing';
console.log(ok ? 'soak: within bounds' : 'soak: BOUND MISSED');
process.exit(ok ? 0 : 1);
