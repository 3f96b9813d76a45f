/**
 * git push deployment end to end: a bare repository set up by `fleetxds git-setup`, a clone that
 * pushes, the server serving <base>/current, and a real gRPC xDS client following each change.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { docOf, editYamlDocs, type Doc } from '../helpers/yaml-edit.ts';
import { projectPath } from '../../src/shared/paths.ts';
import {
  startBackend,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { spawnServer, waitFor, type ServerProcess, runCli } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Ops Person',
  GIT_AUTHOR_EMAIL: 'ops@example.com',
  GIT_COMMITTER_NAME: 'Ops Person',
  GIT_COMMITTER_EMAIL: 'ops@example.com',
};
let base: string, work: string, settings: string;
let server: ServerProcess;
let a: Backend, b: Backend;
let client: GreeterClientHandle;

const cli = (...args: string[]) => runCli(args);
const git = (...args: string[]) => spawnSync('git', args, { cwd: work, env: gitEnv, encoding: 'utf8' });

function editGrpc(edit: (docs: Doc[]) => void): void {
  editYamlDocs(join(work, 'services', 'grpc.yaml'), edit);
}
const doc = docOf;

async function commitAndPush(message: string) {
  assert.is(git('commit', '-qam', message).status, 0);
  return git('push', '-q', 'origin', 'main');
}

async function followsTo(backend: string): Promise<void> {
  await waitFor(
    `RPCs routed to ${backend}`,
    async () => {
      for (let i = 0; i < 10; i++) if ((await client.sayHello('x')).backend !== backend) return false;
      return true;
    },
    20_000,
    50,
  );
}

test.before(async () => {
  try {
    await setupAll();
  } catch (e) {
    console.error('SETUP FAILED', e);
    throw e;
  }
});
async function setupAll() {
  [a, b] = await Promise.all([startBackend('A'), startBackend('B')]);
  base = tempDir('fleetxds-git-');
  const setup = cli('git-setup', '--base', base, '--subdir', 'services');
  assert.is(setup.status, 0, setup.stderr);
  work = tempDir('fleetxds-clone-');
  execFileSync('git', ['clone', '-q', join(base, 'config.git'), work], { env: gitEnv, stdio: 'ignore' });
  cpSync(projectPath('config', 'services'), join(work, 'services'), { recursive: true });
  cpSync(projectPath('config', 'tls'), join(work, 'tls'), { recursive: true });
  editGrpc((docs) => {
    doc(docs, 'Service', 'greeter-v1').endpoints = [{ address: `127.0.0.1:${a.port}` }];
    doc(docs, 'Service', 'greeter-v2').endpoints = [{ address: `127.0.0.1:${b.port}` }];
    doc(docs, 'GrpcService', 'greeter').routes[0].split = [
      { service: 'greeter-v1', weight: 100 },
      { service: 'greeter-v2', weight: 0 },
    ];
  });
  git('add', '-A');
  const first = await commitAndPush('initial fleet config');
  assert.is(first.status, 0, first.stderr);
  assert.match(first.stderr, /is live/);
  settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${join(base, 'current', 'services')}\ndatabase: ${join(tempDir(), 'x.db')}\ngrpc: { listen: ` +
      `127.0.0.1:0 }\nadmin: { listen: 127.0.0.1:0 }\nwatch: { debounceMs: 100, maxWaitMs: 1000 }\nlog: { level: ` +
      `info }\n`,
  );
  server = await spawnServer(settings);
  writeFileSync(
    settings,
    readFileSync(settings, 'utf8').replace(
      'admin: { listen: 127.0.0.1:0 }',
      `admin: { listen: 127.0.0.1:${server.adminPort} }`,
    ),
  );
  client = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(server.grpcPort, 'git-e2e'));
}

test.after(async () => {
  client?.close();
  await server?.stop('SIGKILL');
  await Promise.all([a, b].map((x) => x?.close()));
});

test('the pushed commit is served, with its commit, author and subject recorded', async () => {
  await followsTo('A');
  const versions = (await server.admin('/api/v1/versions')).versions;
  assert.is(versions[0].sourceKind, 'git');
  assert.is(versions[0].commitSha, git('rev-parse', 'HEAD').stdout.trim());
  assert.is(versions[0].author, 'Ops Person <ops@example.com>');
  assert.is(versions[0].subject, 'initial fleet config');
});

test('responses name the version and its git commit (control_plane.identifier)', async () => {
  const { connect, T } = await import('../helpers/ads-client.ts');
  const c = connect(server.grpcPort);
  const s = c.open();
  s.send({ node: { id: 'probe', cluster: 'x' }, type_url: T.cluster });
  const r = await s.next();
  assert.match(
    r.control_plane.identifier,
    new RegExp(`^fleetxds version \\d+ commit ${git('rev-parse', 'HEAD').stdout.trim()}$`),
  );
  s.close();
  c.close();
});

test('a valid push reaches the client without a restart', async () => {
  editGrpc((docs) => {
    doc(docs, 'GrpcService', 'greeter').routes[0].split = [
      { service: 'greeter-v1', weight: 0 },
      { service: 'greeter-v2', weight: 100 },
    ];
  });
  const r = await commitAndPush('move greeter traffic to v2');
  assert.is(r.status, 0, r.stderr);
  await followsTo('B');
  const h = (await server.admin('/api/v1/versions')).versions[0];
  assert.is(h.subject, 'move greeter traffic to v2');
  assert.ok(h.changes.default.changed.includes('route/greeter.internal:50051'), JSON.stringify(h.changes));
});

test('an invalid push is rejected with the validator errors; the client keeps working', async () => {
  const live = readlinkSync(join(base, 'current'));
  editGrpc((docs) => {
    doc(docs, 'GrpcService', 'greeter').routes[0].to = 'greeter-v3';
  });
  const r = await commitAndPush('break it');
  assert.is.not(r.status, 0);
  assert.match(
    r.stderr,
    /grpc\.yaml:\d+:\d+: error FXDS_INVALID_VALUE: GrpcService\/greeter routes\[0\]: a gRPC route needs exactly one of to, split/,
  );
  assert.match(r.stderr, /pre-receive hook declined/);
  assert.is(readlinkSync(join(base, 'current')), live, 'nothing deployed');
  assert.is((await client.sayHello('x')).backend, 'B');
  git('reset', '-q', '--hard', 'HEAD~1');
});

test('a push that deletes every YAML file, or most of a group, is refused by the hook (nothing deployed)', async () => {
  const live = readlinkSync(join(base, 'current'));
  assert.is(
    git(
      'rm',
      '-q',
      'services/edge.yaml',
      'services/services.yaml',
      'services/grpc.yaml',
      'services/groups.yaml',
      'services/tcp.yaml',
    ).status,
    0,
  );
  let r = await commitAndPush('remove everything');
  assert.is.not(r.status, 0);
  assert.match(r.stderr, /error FXDS_EMPTY_TREE: the tree defines nothing to serve/);
  assert.is(readlinkSync(join(base, 'current')), live, 'nothing deployed');
  git('reset', '-q', '--hard', 'HEAD~1');
  // Most of the edge groups: their listeners go (and the clusters only they used).
  assert.is(git('rm', '-q', 'services/edge.yaml').status, 0);
  r = await commitAndPush('drop the edge');
  assert.is.not(r.status, 0);
  assert.match(
    r.stderr,
    /error FXDS_MASS_REMOVAL: node group "canary-edge" would lose \d+ of its \d+ listeners and clusters/,
  );
  assert.is(readlinkSync(join(base, 'current')), live);
  git('reset', '-q', '--hard', 'HEAD~1');
  assert.is((await client.sayHello('x')).backend, 'B');
});

test('rollback to the first version through the CLI; the client follows; history records it', async () => {
  const versions = (await server.admin('/api/v1/versions')).versions;
  const first = versions[versions.length - 1].id;
  const r = cli('rollback', String(first), '--config', settings);
  assert.is(r.status, 0, r.stderr);
  await followsTo('A');
  const h = cli('history', '--config', settings);
  assert.is(h.status, 0, h.stderr);
  assert.match(h.stdout.split('\n')[0]!, /^\* #\d+ .* rollback .* rollback to #\d+: initial fleet config/);
  // diff: the resources that changed, each changed one line by line (here the route's split B -> A).
  const newest = versions[0].id;
  const d = cli('diff', String(newest), String(first), '--config', settings);
  assert.is(d.status, 0, d.stderr);
  assert.match(d.stdout, /^group default:\n/m);
  assert.match(d.stdout, /^ {2}~ route\/\S+\n {4}--- version \d+\n {4}\+\+\+ version \d+\n/m);
  assert.match(d.stdout, /^ {4}- .*"weight": /m);
  assert.match(d.stdout, /^ {4}\+ .*"weight": /m);
  assert.match(cli('diff', String(first), String(first), '--config', settings).stdout, /serve the same resources/);
  assert.ok(JSON.parse(cli('diff', String(newest), String(first), '--json', '--config', settings).stdout).default);
  const audit = await server.admin('/api/v1/audit');
  assert.is(audit.audit[0].action, 'rollback');
  // The rollback sticks: the unchanged directory is not re-applied over it.
  await new Promise((res) => setTimeout(res, 500));
  assert.is((await client.sayHello('x')).backend, 'A');
});

test('pinning a group holds it at a version while the next push moves everyone else', async () => {
  const versions = (await server.admin('/api/v1/versions')).versions;
  const current = versions[0].id;
  const pin = cli('pin', 'default', String(current), '--config', settings);
  assert.is(pin.status, 0, pin.stderr);
  editGrpc((docs) => {
    doc(docs, 'GrpcService', 'greeter').routes[0].split = [
      { service: 'greeter-v1', weight: 0 },
      { service: 'greeter-v2', weight: 100 },
    ];
    doc(docs, 'Service', 'greeter-v1').connectTimeout = '4s';
  });
  const r = await commitAndPush('v2 again, for everyone but the pinned group');
  assert.is(r.status, 0, r.stderr);
  await waitFor('new version applied', async () => (await server.admin('/api/v1/versions')).versions[0].id > current);
  await new Promise((res) => setTimeout(res, 300));
  assert.is((await client.sayHello('x')).backend, 'A', 'the pinned default group stays on A');
  assert.is(cli('unpin', 'default', '--config', settings).status, 0);
  await followsTo('B');
});

test.run();
