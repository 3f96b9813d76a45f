import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import { loadServerConfig } from '../../src/config/server-config.ts';
import * as assert from 'uvu/assert';
import { schemaText } from '../../src/cli/schema.ts';
import { withCredential } from '../../src/cli/register.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { BASE, writeTree } from '../helpers/tree.ts';
import { runCli } from '../helpers/process.ts';

const cli = (...args: string[]) => runCli(args);

test('validate: the bundled example config is valid', () => {
  const r = cli('validate', 'config/services');
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /config\/services: valid/);
});

test('validate: exits 1 and prints file:line:column, code and reason for each error', () => {
  const dir = writeTree({
    ...BASE,
    'edge.yaml': BASE['edge.yaml']!.replace('to: api', 'to: nope').replace('port: 8080', 'port: 8080\nprot: 1'),
  });
  const r = cli('validate', dir);
  assert.is(r.status, 1);
  const lines = r.stderr.trim().split('\n');
  assert.ok(
    lines.includes(
      'edge.yaml:4:1: error FXDS_UNKNOWN_FIELD: Listener/edge prot: unknown field "prot" (did you mean "port"?)',
    ),
    r.stderr,
  );
  assert.ok(
    lines.some((l) =>
      /^edge\.yaml:12:9: error FXDS_UNKNOWN_REFERENCE: VirtualHost\/site routes\[0\]\.to: service "nope" does not exist/.test(
        l,
      ),
    ),
    r.stderr,
  );
  assert.match(lines[lines.length - 1]!, /invalid \(2 error\(s\)/);
});

test('validate --json gives machine-readable diagnostics', () => {
  const dir = writeTree({ ...BASE, 'x.yaml': 'kind: Nope\nname: x\n' });
  const r = cli('validate', dir, '--json');
  assert.is(r.status, 1);
  const out = JSON.parse(r.stdout);
  assert.is(out.ok, false);
  assert.is(out.diagnostics[0].code, 'FXDS_UNKNOWN_KIND');
  assert.equal(out.diagnostics[0].location, { file: 'x.yaml', line: 1, column: 7 });
});

test('render prints the resources of one group and type', () => {
  const r = cli('render', writeTree(BASE), '--group', 'default', '--kind', 'cluster');
  assert.is(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(
    out.default.cluster.resources.map((x: { name: string }) => x.name),
    ['api', 'web'],
  );
});

test('output piped to a reader that stops early (| head -1) ends the command quietly', () => {
  // The schema is more than a pipe holds: the writer meets the closed pipe.
  const cmd = `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts schema | head -c 10`;
  const r = spawnSync('bash', ['-o', 'pipefail', '-c', cmd], { cwd: projectPath(), encoding: 'utf8' });
  assert.is(r.stdout.length, 10);
  assert.is(r.stderr, '', 'no EPIPE stack trace');
  assert.is(r.status, 0);
});

test('unknown command and missing arguments exit 2 with usage', () => {
  assert.is(cli('frobnicate').status, 2);
  assert.is(cli('validate').status, 2);
});

test('the published JSON Schema is the one generated from the validator schema', () => {
  assert.fixture(readFileSync(projectPath('config', 'schema', 'fleetxds.schema.json'), 'utf8'), schemaText());
});

test('serve refuses invalid server settings with a clear message', () => {
  const dir = writeTree({
    'bad.yaml': 'configDir: x\ndatabase: y\ngrpc: { listen: nowhere }\nadmin: { listen: 127.0.0.1:0 }\nextra: 1\n',
  });
  const r = cli('serve', '--config', `${dir}/bad.yaml`);
  assert.is(r.status, 1);
  assert.match(r.stderr, /invalid settings/);
  assert.match(r.stderr, /grpc\.listen/);
});

test('grpc.threads takes a count of 1 to 256 or auto, nothing else', () => {
  for (const [threads, ok] of [
    ['2', true],
    ['auto', true],
    ['0', false],
    ['many', false],
    ['1.5', false],
  ] as const) {
    const dir = writeTree({
      'f.yaml': `configDir: x\ndatabase: y\ngrpc: { listen: 127.0.0.1:0, threads: ${threads} }\nadmin: { listen: 127.0.0.1:0 }\n`,
    });
    const load = () => loadServerConfig(`${dir}/f.yaml`, {});
    if (ok) assert.is(String(load().grpc.threads), threads);
    else assert.throws(load, /grpc\.threads/, `threads: ${threads}`);
  }
});

test("register takes its secret from systemd's credentials: the key with a client certificate, else the token", () => {
  const creds = writeTree({ secret: 'x' });
  const secret = join(creds, 'secret');
  assert.equal(withCredential({ tlsCert: '/c.pem' }, creds), { tlsCert: '/c.pem', tlsKey: secret });
  assert.equal(withCredential({}, creds), { tokenFile: secret });
  assert.equal(withCredential({ tokenFile: '/t' }, creds), { tokenFile: '/t' }, 'a flag wins');
  assert.equal(withCredential({}, undefined), {});
  assert.equal(withCredential({}, writeTree({ other: 'x' })), {});
});

test.run();
