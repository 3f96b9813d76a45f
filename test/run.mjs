#!/usr/bin/env node
// Runs every test/**/*.test.ts file in its own Node process (uvu + tsx), several at once, then
// prints the closing line CI reads: "N passed, N failed". A file that crashes before uvu's summary
// counts as one failure. Usage: node test/run.mjs [filter-substring ...]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2);

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

/**
 * Files whose outcome does not depend on the Node.js major running the tests: CI runs them on its
 * first Node.js (24) and, with FLEETXDS_TEST_ONE_NODE_DONE set, leaves them out on the others.
 * Every file that starts the server (its gRPC, REST and TLS transports, its serving threads, file
 * watching, SQLite binding) runs on every Node.js, unless what it proves is the config it serves.
 */
const ONE_NODE = [
  // The packages carry their own Node.js 24 runtime, whatever runs the tests.
  ['test/release/', 'the packages run their own Node.js'],
  // Pure functions of a tree: translation, goldens, checks, generated pages, the layering rules.
  ['test/translate/', 'pure translation'],
  ['test/model/', 'pure checks'],
  ['test/compile/', 'validation and real Envoy'],
  ['test/architecture/', 'source layout'],
  ['test/packaging/', 'build outputs'],
  ['test/bench/', 'benchmark bookkeeping'],
  ['test/bootstrap/', 'generated bootstraps'],
  ['test/docs/', "the docs' commands, run on the checkout's Node.js"],
  ['test/e2e/envoy-re2-corpus', "re2js against Envoy's regex engine"],
  // The status page in Chromium.
  ['test/admin/status-page', 'the page in a browser'],
  // Features proven by the traffic real Envoy routes with the config served; the transports that
  // carry it are proven on every Node.js by test/transports/ and the e2e transport suites.
  ...[
    'access-log',
    'access',
    'affinity',
    'aggregate',
    'auth',
    'headers',
    'http-settings',
    'patches',
    'rate-limits',
    'retries',
    'tcp',
    'traffic',
    'websocket',
    'weighted-by-load',
    'fault',
    'runtime',
    'zone-aware',
    'locality',
    // Its TTL framing and renewals are proven on every Node.js by test/transports/ttl.test.ts.
    'expiry',
    // The extension config type's framing and push order are proven on every Node.js by the SotW
    // and delta protocol suites.
    'policy-ecds',
  ].map((f) => [`test/e2e/envoy-${f}.test.ts`, 'a feature through Envoy']),
  ['test/e2e/grpc-go-balancing', 'a feature through a real gRPC client'],
  // The server's state machines seen through Envoy (stages, registrations, the warming hold): pure
  // logic, whose transports are proven on every Node.js by test/transports/.
  ...['rollout', 'registration', 'warming'].map((f) => [`test/e2e/envoy-${f}.test.ts`, 'server logic through Envoy']),
];
const oneNodeDone = process.env.FLEETXDS_TEST_ONE_NODE_DONE;
const onOneNode = (file) => ONE_NODE.some(([prefix]) => relative(root, file).startsWith(prefix));

const selected = find(join(root, 'test')).filter((f) => !filters.length || filters.some((x) => f.includes(x)));
const files = oneNodeDone ? selected.filter((f) => !onOneNode(f)) : selected;
if (oneNodeDone)
  console.log(
    `${selected.length - files.length} files do not depend on the Node.js major and ran on Node.js ${oneNodeDone}: ` +
      'not run again here (ONE_NODE in test/run.mjs)',
  );

// The protos as the server loads them after `npm run build` (dist/proto/envoy.json): tests run the
// path production runs, not only the slower .proto parse a clean clone would fall back to.
{
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src', 'xds', 'proto-root.ts')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) console.log('warning: writing the proto descriptor failed; tests parse the .proto files');
}

// The server as `npm run build` deploys it, built once before any test starts (when a source changed):
// tests that run dist/ (the docs' `npm start`, the release) never see it rewritten under them.
{
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(root, 'src', 'packaging', 'build.ts'), '--if-changed'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (r.status !== 0) console.log('warning: building dist/ failed; the tests that run it will fail');
  // Servers and commands the tests start run this build (test/helpers/process.ts fleetxdsArgs).
  else process.env.FLEETXDS_TEST_BUILT = '1';
}

// The end-to-end tests run real Envoy: install the releases they use (quick when already there).
// If this fails, those tests fail with the reason; they never skip.
if (files.some((f) => f.includes('envoy'))) {
  const r = spawnSync('bash', [join(root, 'test', 'envoy', 'install.sh')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) console.log('warning: installing Envoy failed; the Envoy tests will fail');
}
// The gRPC-Go tests run a Go client of the test harness's: build it (quick when built already).
if (files.some((f) => f.includes('grpc-go'))) {
  const r = spawnSync('bash', [join(root, 'test', 'grpc-go', 'build.sh')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) console.log('warning: building the gRPC-Go client failed; the gRPC-Go tests will fail');
}
const ESC = String.fromCharCode(27);
const strip = (s) => s.replaceAll(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '');

// The gRPC protocol suites and the mTLS node-identity and certificate renewal tests run twice:
// served by the main thread, and by two serving threads (grpc.threads), whose streams get their
// configs through the thread feed and whose TLS connections are accepted by the threads themselves.
const ON_THREADS = [
  'sotw-protocol.test.ts',
  'delta-protocol.test.ts',
  'security/security.test.ts',
  'security/listener-certificates.test.ts',
];
// The protocol suites run a third time over grpc-js's server (grpc.implementation: grpc-js), which
// the settings keep to measure the two servers side by side: it must speak xDS the same way (on the
// first Node.js major only: the measured alternative, not what serves).
const ON_GRPC_JS = oneNodeDone ? [] : ['sotw-protocol.test.ts', 'delta-protocol.test.ts'];
const runs = files.flatMap((file) => [
  { file, env: {}, label: '' },
  ...(ON_THREADS.some((f) => file.endsWith(f))
    ? [{ file, env: { FLEETXDS_TEST_GRPC_THREADS: '2' }, label: ' (grpc.threads: 2)' }]
    : []),
  ...(ON_GRPC_JS.some((f) => file.endsWith(f))
    ? [{ file, env: { FLEETXDS_TEST_GRPC_IMPLEMENTATION: 'grpc-js' }, label: ' (grpc.implementation: grpc-js)' }]
    : []),
]);

/**
 * How many test files run at once: one per core. Each file starts processes of its own (the
 * server, Envoys, clients), so more than that starves them, and tests of timeouts (Envoy's 1 s
 * REST request_timeout) fail on a machine that is only busy. FLEETXDS_TEST_JOBS overrides it (1
 * runs them one after another).
 */
const jobs = Math.max(1, Number(process.env.FLEETXDS_TEST_JOBS) || availableParallelism());

/**
 * Each file's duration from the last run on this checkout (kept out of git): the slowest start
 * first, so the run is not left waiting on one long file at its end. Files never timed (a clean
 * clone) start in the order of the directories known to hold the long ones.
 */
const durationsFile = join(root, '.tmp', 'test-durations.json');
let durations = {};
try {
  durations = JSON.parse(readFileSync(durationsFile, 'utf8'));
} catch {
  // first run on this checkout
}
const SLOW_FIRST = ['test/release/', 'test/e2e/', 'test/replicas/', 'test/docs/', 'test/app/', 'test/transports/'];
const guess = (file) => {
  const rel = relative(root, file);
  const i = SLOW_FIRST.findIndex((d) => rel.startsWith(d));
  return i < 0 ? 0 : 1e6 - i;
};
const key = (r) => relative(root, r.file) + r.label;
runs.sort((a, b) => (durations[key(b)] ?? guess(b.file)) - (durations[key(a)] ?? guess(a.file)));

function runFile(file, extraEnv) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10 * 60 * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const text = strip(out);
      const total = Number(/Total:\s+(\d+)/.exec(text)?.[1] ?? NaN);
      const passed = Number(/Passed:\s+(\d+)/.exec(text)?.[1] ?? NaN);
      const skipped = Number(/Skipped:\s+(\d+)/.exec(text)?.[1] ?? 0);
      resolve({ file, code, text, total, passed, skipped, ms: Date.now() - started });
    });
  });
}

let passed = 0,
  failed = 0,
  skipped = 0;
const started = Date.now();
const queue = [...runs];
const timed = { ...durations };

function report(run, r) {
  const name = key(run);
  timed[name] = r.ms;
  if (Number.isNaN(r.total)) {
    failed += 1;
    console.log(`FAIL ${name} (crashed, exit ${r.code}, ${r.ms} ms)\n${r.text}`);
    return;
  }
  const f = r.total - r.passed - r.skipped;
  passed += r.passed;
  failed += f + (f === 0 && r.code !== 0 ? 1 : 0);
  skipped += r.skipped;
  if (f > 0 || r.code !== 0)
    console.log(`FAIL ${name}: ${r.passed}/${r.total} passed (exit ${r.code}, ${r.ms} ms)\n${r.text}`);
  else console.log(`ok   ${name}: ${r.passed} passed${r.skipped ? `, ${r.skipped} skipped` : ''} (${r.ms} ms)`);
}

/** One worker: takes the next file until none is left. Its number keeps its ports apart (freePort). */
async function worker(n) {
  for (let run = queue.shift(); run; run = queue.shift()) {
    const r = await runFile(run.file, {
      ...run.env,
      FLEETXDS_TEST_WORKER: String(n),
      FLEETXDS_TEST_WORKERS: String(workers),
    });
    report(run, r);
  }
}
const workers = Math.min(jobs, runs.length);
await Promise.all(Array.from({ length: workers }, (_, n) => worker(n)));

mkdirSync(dirname(durationsFile), { recursive: true });
writeFileSync(durationsFile, JSON.stringify(timed, null, 1));
const seconds = Math.round((Date.now() - started) / 1000);
console.log(`${runs.length} files in ${seconds} s, ${workers} at a time`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed ? 1 : 0;
