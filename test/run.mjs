#!/usr/bin/env node
// Runs every test/**/*.test.ts file in its own Node process (uvu + tsx), then prints the closing
// line CI reads: "N passed, N failed". A file that crashes before uvu's summary counts as one
// failure. Usage: node test/run.mjs [filter-substring ...]
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
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

const files = find(join(root, 'test')).filter((f) => !filters.length || filters.some((x) => f.includes(x)));

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
const runs = files.flatMap((file) => [
  { file, env: {}, label: '' },
  ...(ON_THREADS.some((f) => file.endsWith(f))
    ? [{ file, env: { FLEETXDS_TEST_GRPC_THREADS: '2' }, label: ' (grpc.threads: 2)' }]
    : []),
]);

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
for (const { file, env, label } of runs) {
  const r = await runFile(file, env);
  const name = relative(root, file) + label;
  if (Number.isNaN(r.total)) {
    failed += 1;
    console.log(`FAIL ${name} (crashed, exit ${r.code}, ${r.ms} ms)\n${r.text}`);
    continue;
  }
  const f = r.total - r.passed - r.skipped;
  passed += r.passed;
  failed += f + (f === 0 && r.code !== 0 ? 1 : 0);
  skipped += r.skipped;
  if (f > 0 || r.code !== 0)
    console.log(`FAIL ${name}: ${r.passed}/${r.total} passed (exit ${r.code}, ${r.ms} ms)\n${r.text}`);
  else console.log(`ok   ${name}: ${r.passed} passed${r.skipped ? `, ${r.skipped} skipped` : ''} (${r.ms} ms)`);
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exitCode = failed ? 1 : 0;
