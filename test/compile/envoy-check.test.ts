/**
 * Envoy as the final judge: with Envoy binaries configured, what real Envoy rejects blocks a tree
 * (validate, the apply pipeline) and is reported against the YAML document that produced it. The
 * cases are things only Envoy knows: a CA file missing on the host, a direct response body over
 * Envoy's 4 KiB limit.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { EnvoyChecker, envoyCheckDir, verdictOf, type ValidateOutcome } from '../../src/compile/envoy-check.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { envoyBinary } from '../helpers/envoy.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const binaries = [envoyBinary('1.40'), envoyBinary('1.36')];

const MISSING_CA = BASE['services.yaml']!.replace(
  'name: web\n',
  'name: web\ntls: { sni: web.internal, caFile: /nonexistent/fleetxds-ca.pem }\n',
);
const TWO_VHOSTS =
  BASE['edge.yaml']!.replace('virtualHosts: [site]', 'virtualHosts: [site, other]') +
  `---
kind: VirtualHost
name: other
domains: [other.example.com]
routes:
  - match: { prefix: /forbidden }
    to: web
`;

/**
 * A stand-in for the Envoy binary that refuses any configuration with a `/forbidden` route, in
 * Envoy's words: it tests how a rejection is traced to a document (real Envoy is used above).
 */
function fakeEnvoy(): string {
  const dir = writeTree({
    envoy: `#!/bin/sh
if [ "$1" = "--version" ]; then echo "envoy  version: 0/9.9.9/Clean/RELEASE/BoringSSL"; exit 0; fi
if grep -q '"/forbidden"' "$4"; then echo "[critical][main] error initializing configuration '$4': route prefix /forbidden is refused"; exit 1; fi
echo "configuration '$4' OK"
exit 0
`,
  });
  chmodSync(join(dir, 'envoy'), 0o755);
  return join(dir, 'envoy');
}

test('the bundled example config is accepted by Envoy 1.40 and 1.36', async () => {
  const checker = new EnvoyChecker({ binaries });
  const r = await checkTree(projectPath('config', 'services'), undefined, { envoy: checker });
  assert.equal(r.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic), []);
  assert.ok(r.config);
  // edge, per binary; canary-edge has the same resources as edge and shares its check; default
  // holds gRPC applications only, not Envoy's to judge.
  assert.equal(checker.stats, { runs: 1 * 2, skipped: 1 * 2 });
  // Unchanged groups are not checked again.
  await checkTree(projectPath('config', 'services'), undefined, { envoy: checker });
  assert.equal(checker.stats, { runs: 2, skipped: 2 + 4 });
});

test("a cluster Envoy refuses blocks the tree, reported at its Service with Envoy's words, per Envoy release", async () => {
  const dir = writeTree({ ...BASE, 'services.yaml': MISSING_CA });
  const plain = await checkTree(dir);
  assert.ok(plain.config, 'our own validator cannot know the proxy host lacks the file');
  const r = await checkTree(dir, undefined, { envoy: new EnvoyChecker({ binaries }) });
  assert.is(r.config, undefined);
  const errors = r.diagnostics.filter((d) => d.code === 'FXDS_ENVOY_REJECTED').map(formatDiagnostic);
  assert.equal(errors, [
    'services.yaml:8:1: error FXDS_ENVOY_REJECTED: Service/web: Envoy 1.36.4 rejects it (node group "default"): ' +
      'Invalid path: /nonexistent/fleetxds-ca.pem',
    'services.yaml:8:1: error FXDS_ENVOY_REJECTED: Service/web: Envoy 1.40.0 rejects it (node group "default"): ' +
      'Invalid path: /nonexistent/fleetxds-ca.pem',
  ]);
});

test('a rejected route is traced to its virtual host, not to the listener or a sibling virtual host', async () => {
  const dir = writeTree({ ...BASE, 'edge.yaml': TWO_VHOSTS });
  const r = await checkTree(dir, undefined, { envoy: new EnvoyChecker({ binaries: [fakeEnvoy()] }) });
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    'edge.yaml:14:1: error FXDS_ENVOY_REJECTED: VirtualHost/other: Envoy 9.9.9 rejects it (node group ' +
      '"default"): route prefix /forbidden is refused',
  ]);
});

test('TCP listeners, TLS termination for TCP and passthrough chains are accepted by Envoy 1.40 and 1.36', async () => {
  const r = await checkTree(projectPath('test', 'golden', 'cases', 'tcp-listeners', 'input'), undefined, {
    envoy: new EnvoyChecker({ binaries }),
  });
  assert.equal(r.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic), []);
  assert.ok(r.config);
});

test("a group of gRPC applications is not Envoy's to judge: its certificate providers are no Envoy's", async () => {
  const checker = new EnvoyChecker({ binaries: [fakeEnvoy()] });
  const r = await checkTree(projectPath('test', 'golden', 'cases', 'grpc-servers', 'input'), undefined, {
    envoy: checker,
  });
  assert.equal(r.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic), []);
  assert.ok(r.config);
  // Only the (empty) default group went to Envoy, not the gRPC group "mesh".
  assert.is(checker.stats.runs, 1);
});

test('a rejected route of a listener with a passthrough chain is still traced to its virtual host', async () => {
  const dir = writeTree({
    ...BASE,
    'edge.yaml': TWO_VHOSTS.replace(
      'virtualHosts: [site, other]',
      'virtualHosts: [site, other]\npassthrough: [{ serverNames: [db.example], to: api }]',
    ),
  });
  const r = await checkTree(dir, undefined, { envoy: new EnvoyChecker({ binaries: [fakeEnvoy()] }) });
  assert.match(r.diagnostics.map(formatDiagnostic).join('\n'), /VirtualHost\/other: Envoy 9\.9\.9 rejects it/);
});

// The validator's regex verdicts against real Envoy, per release: test/e2e/envoy-re2-corpus.test.ts.

test('the apply pipeline refuses what Envoy rejects and keeps serving the last good version', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir, { envoyCheck: { binaries } });
  try {
    const good = app.cache.current!.versionId;
    writeTree({ 'services.yaml': MISSING_CA }, dir);
    const outcome = (await app.reload()) as { status: string; diagnostics: { code: string }[] };
    assert.is(outcome.status, 'rejected');
    assert.ok(outcome.diagnostics.some((d) => d.code === 'FXDS_ENVOY_REJECTED'));
    assert.is(app.cache.current!.versionId, good);
    assert.match(JSON.stringify(app.stores.rejections.latest()), /Invalid path/);
  } finally {
    await app.close();
  }
});

test('validate --envoy from the command line', async () => {
  const { spawnSync } = await import('node:child_process');
  const dir = writeTree({ ...BASE, 'services.yaml': MISSING_CA });
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', projectPath('src', 'cli', 'main.ts'), 'validate', dir, '--envoy', binaries[0]!],
    { cwd: projectPath(), encoding: 'utf8' },
  );
  assert.is(r.status, 1);
  assert.match(r.stderr, /services\.yaml:8:1: error FXDS_ENVOY_REJECTED: Service\/web: Envoy 1\.40\.0 rejects it/);
  const ok = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      projectPath('src', 'cli', 'main.ts'),
      'validate',
      join(projectPath('config'), 'services'),
      '--envoy',
      binaries[0]!,
    ],
    { cwd: projectPath(), encoding: 'utf8' },
  );
  assert.is(ok.status, 0, ok.stderr);
});

test('validate --envoy killed mid-check leaves no rendering (which holds private keys) behind', async () => {
  const { spawn } = await import('node:child_process');
  const { mkdirSync: mk, readdirSync, writeFileSync: write } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const base = join(tmpdir(), `fleetxds-validate-${process.getuid!()}`);
  // A run killed before this fix could not clean up: its folder (a pid no longer alive) goes at the next run.
  mk(join(base, 'run-999999999'), { recursive: true, mode: 0o700 });
  write(join(base, 'run-999999999', 'bootstrap.json'), '{"private_key": "..."}');
  const slow = writeTree({
    envoy: `#!/bin/sh
if [ "$1" = "--version" ]; then echo "envoy  version: 0/9.9.9/Clean/RELEASE/BoringSSL"; exit 0; fi
sleep 30
`,
  });
  chmodSync(join(slow, 'envoy'), 0o755);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      projectPath('src', 'cli', 'main.ts'),
      'validate',
      writeTree(BASE),
      '--envoy',
      join(slow, 'envoy'),
    ],
    { cwd: projectPath(), stdio: 'ignore' },
  );
  const mine = join(base, `run-${child.pid}`);
  const renderings = () => {
    try {
      return readdirSync(mine, { recursive: true }).filter((f) => String(f).endsWith('bootstrap.json'));
    } catch {
      return [];
    }
  };
  for (let i = 0; i < 200 && !renderings().length; i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(renderings().length > 0, 'the check is under way, its rendering on disk');
  assert.not.ok(existsSync(join(base, 'run-999999999')), "a dead run's leftovers were removed");
  const exit = new Promise((r) => child.on('exit', r));
  child.kill('SIGTERM');
  await exit;
  assert.not.ok(existsSync(mine), 'the killed run removed its folder');
});

const exited = (
  code: number | null,
  stdout = '',
  stderr = '',
  signal: NodeJS.Signals | null = null,
): ValidateOutcome => ({
  kind: 'exited',
  code,
  signal,
  stdout,
  stderr,
});

test('a verdict is an acceptance only when Envoy exited 0 and said OK; anything else fails closed', () => {
  const rows: [string, ValidateOutcome, RegExp | undefined][] = [
    ['OK', exited(0, "configuration '/x/b.json' OK\n"), undefined],
    ['its error', exited(1, "[critical] error initializing configuration '/x': bad thing\n"), /^bad thing$/],
    ['silent non-zero exit', exited(1), /exited 1 and printed nothing/],
    ['silent exit 0', exited(0), /exited 0 without saying the configuration is OK/],
    ['exit 0 with something else', exited(0, 'hello'), /without saying .* OK: hello/],
    ['killed by a signal', exited(null, '', '', 'SIGSEGV'), /ended by SIGSEGV/],
    ['killed by a signal after saying OK', exited(null, 'configuration OK', '', 'SIGKILL'), /ended by SIGKILL/],
    ['timed out', { kind: 'timed-out' }, /no verdict within 1000 ms/],
    ['last line when no error line', exited(2, '', 'unknown option --mode\n'), /unknown option --mode \(exit 2\)/],
  ];
  for (const [what, outcome, expected] of rows) {
    const v = verdictOf(outcome, 1000);
    if (!expected) assert.is(v, undefined, what);
    else assert.match(v?.message ?? '(accepted)', expected, what);
    if (v) assert.is(v.judged, what === 'its error', `${what}: only an error line of Envoy's is traced to a document`);
  }
});

/** A stand-in binary running `body` for `--mode validate` (and answering --version). */
function script(body: string): string {
  const dir = writeTree({
    envoy: `#!/bin/sh
if [ "$1" = "--version" ]; then echo "envoy  version: 0/9.9.9/Clean/RELEASE/BoringSSL"; exit 0; fi
${body}
`,
  });
  chmodSync(join(dir, 'envoy'), 0o755);
  return join(dir, 'envoy');
}

test('a binary that prints nothing, dies by a signal or hangs blocks the tree with the reason', async () => {
  const cases: [string, string, RegExp][] = [
    [
      'silent exit 1',
      'exit 1',
      /Envoy 9\.9\.9 could not check node group "default": Envoy exited 1 and printed nothing/,
    ],
    ['silent exit 0', 'exit 0', /exited 0 without saying the configuration is OK/],
    ['killed', 'kill -SEGV $$', /ended by SIGSEGV/],
    ['ignores SIGTERM and hangs', "trap '' TERM; sleep 30", /no verdict within 1000 ms/],
  ];
  for (const [what, body, expected] of cases) {
    const started = Date.now();
    const r = await checkTree(writeTree(BASE), undefined, {
      envoy: new EnvoyChecker({ binaries: [script(body)], timeoutMs: 1000 }),
    });
    assert.is(r.config, undefined, `${what}: the tree is refused`);
    assert.match(r.diagnostics.map(formatDiagnostic).join('\n'), expected, what);
    assert.ok(Date.now() - started < 10_000, `${what}: killed at its time-out, not waited for`);
  }
});

test("renderings go to the server's own folder, which a start empties of what a killed run left", async () => {
  const database = join(tempDir(), 'fleetxds.db');
  const own = envoyCheckDir(database)!;
  mkdirSync(join(own, 'fleetxds-envoy-check-left'), { recursive: true });
  writeFileSync(join(own, 'fleetxds-envoy-check-left', 'bootstrap.json'), '{"private_key": "..."}');
  const seen = join(tempDir(), 'seen');
  const binary = script(`echo "$4" >> ${seen}; echo "configuration '$4' OK"`);
  const app = await startServer(writeTree(BASE), { database, envoyCheck: { binaries: [binary] } });
  try {
    assert.not.ok(existsSync(join(own, 'fleetxds-envoy-check-left')), 'the leftover is gone');
    const paths = readFileSync(seen, 'utf8').trim().split('\n');
    assert.ok(paths.length > 0 && paths.every((p) => p.startsWith(`${own}/`)), paths.join(', '));
    assert.ok(
      paths.every((p) => !existsSync(p)),
      'each rendering is removed after its run',
    );
  } finally {
    await app.close();
  }
});

test.run();
