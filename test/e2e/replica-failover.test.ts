/**
 * Failover between replicas with clients nobody here wrote: an Envoy 1.40 (ADS) and a proxyless
 * @grpc/grpc-js-xds client, both bootstrapped by `fleetxds bootstrap` with two replicas (Envoy: two
 * endpoints in its xDS cluster; gRPC: one ipv4: target listing both). Replica 1 is killed
 * (SIGKILL) under a steady request stream: no request and no RPC fails, both clients reconnect to
 * replica 2, and a change applied after the kill reaches them through it.
 */
import { cpSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { projectPath } from '../../src/shared/paths.ts';
import { freePort, startEnvoy, type EnvoyProcess } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure, startHttpBackend, type Backend } from '../helpers/envoy-lab.ts';
import {
  startBackend,
  xdsGreeterClient,
  type Backend as GrpcBackend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { spawnServer, waitFor, type ServerProcess, runCli } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';
import { docOf, editYamlDocs } from '../helpers/yaml-edit.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let root: string;
let port: number;
let httpPort: number;
const replicas: ServerProcess[] = [];
let envoy: EnvoyProcess;
let grpcClient: GreeterClientHandle;
let a: Backend, b: Backend;
let ga: GrpcBackend, gb: GrpcBackend;

function settings(n: number): string {
  const file = join(root, `fleetxds-${n}.yaml`);
  writeFileSync(
    file,
    stringify({
      configDir: 'services',
      database: `state-${n}/fleetxds.db`,
      grpc: { listen: `127.0.0.${n}:${port}` },
      admin: { listen: '127.0.0.1:0' },
      watch: { enabled: true, debounceMs: 100, maxWaitMs: 1000 },
      log: { level: 'info' },
      sds: { insecureLoopbackOnly: true },
    }),
  );
  return file;
}

function bootstrap(mode: string, nodeId: string): any {
  const out = runCli([
    'bootstrap',
    '--config',
    join(root, 'fleetxds-1.yaml'),
    '--mode',
    mode,
    '--node-id',
    nodeId,
    '--server',
    `127.0.0.1:${port}`,
    '--server',
    `127.0.0.2:${port}`,
  ]);
  if (out.status !== 0) throw new Error(out.stderr);
  return JSON.parse(out.stdout);
}

const replicaOf = async (nodeId: string): Promise<number | undefined> => {
  for (const [i, r] of replicas.entries()) {
    if (r.child.exitCode !== null || r.child.signalCode !== null) continue;
    const n = await r.admin(`/api/v1/nodes/${nodeId}`).catch(() => undefined);
    if (n?.streams?.some((s: any) => !s.disconnectedAt)) return i + 1;
  }
  return undefined;
};

test.before(async () => {
  [a, b] = await Promise.all([startHttpBackend('A'), startHttpBackend('B')]);
  [ga, gb] = await Promise.all([startBackend('GA'), startBackend('GB')]);
  root = tempDir('fleetxds-failover-');
  cpSync(projectPath('config'), root, { recursive: true });
  port = await freePort();
  httpPort = await freePort();
  editYamlDocs(join(root, 'services', 'grpc.yaml'), (docs) => {
    docOf(docs, 'Service', 'greeter-v1').endpoints = [{ address: `127.0.0.1:${ga.port}` }];
    docOf(docs, 'Service', 'greeter-v2').endpoints = [{ address: `127.0.0.1:${gb.port}` }];
    docOf(docs, 'GrpcService', 'greeter').routes[0].split = [
      { service: 'greeter-v1', weight: 100 },
      { service: 'greeter-v2', weight: 0 },
    ];
  });
  writeFileSync(
    join(root, 'services', 'failover.yaml'),
    [
      { kind: 'Service', name: 'fa', endpoints: [{ address: `127.0.0.1:${a.port}` }] },
      { kind: 'Service', name: 'fb', endpoints: [{ address: `127.0.0.1:${b.port}` }] },
      { kind: 'VirtualHost', name: 'fo', domains: ['*'], routes: [{ match: { prefix: '/' }, to: 'fa' }] },
      { kind: 'Listener', name: 'fo-http', address: '127.0.0.1', port: httpPort, virtualHosts: ['fo'] },
    ]
      .map((d) => stringify(d))
      .join('---\n'),
  );
  // Replica 1 first, so both clients start on it; replica 2 joins before it is killed.
  replicas.push(await spawnServer(settings(1), { FLEETXDS_GRPC_LISTEN: `127.0.0.1:${port}` }));
  envoy = await startEnvoy('1.40', bootstrap('ads', 'failover-envoy'), root).catch(reportSetupFailure);
  grpcClient = xdsGreeterClient('greeter.internal:50051', bootstrap('grpc', 'failover-grpc'));
  await waitFor(
    'Envoy routes to A',
    async () => (await httpGet(httpPort, '/x', 'any').catch(() => undefined))?.body === 'A',
  );
  assert.is((await grpcClient.sayHello('warm-up')).backend, 'GA');
  replicas.push(await spawnServer(settings(2), { FLEETXDS_GRPC_LISTEN: `127.0.0.2:${port}` }));
  assert.is(await replicaOf('failover-envoy'), 1);
  assert.is(await replicaOf('failover-grpc'), 1);
});

test.after(async () => {
  grpcClient?.close();
  await envoy?.stop();
  for (const r of replicas) await r.stop('SIGKILL').catch(() => undefined);
  for (const s of [a, b]) s?.server.close();
  for (const s of [ga, gb]) await s?.close();
});

test('killing the replica both clients use: no request fails, they move to the other, later changes arrive', async () => {
  let stop = false;
  const failures: string[] = [];
  let requests = 0;
  let rpcs = 0;
  // Each failure names when it happened (after the kill, after the change) and what Envoy said.
  let phase = 'before the kill';
  const t0 = Date.now();
  const when = () => `${phase}, +${Date.now() - t0} ms`;
  const load = (async () => {
    while (!stop) {
      const [h, g] = await Promise.allSettled([httpGet(httpPort, '/x', 'any'), grpcClient.sayHello('steady', 3000)]);
      requests++;
      rpcs++;
      if (h.status === 'rejected' || h.value.status !== 200)
        failures.push(
          `http: ${h.status === 'rejected' ? h.reason : `${h.value.status} ${h.value.body.slice(0, 200)}`} (${when()})`,
        );
      if (g.status === 'rejected') failures.push(`rpc: ${g.reason} (${when()})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const killedAt = Date.now();
  phase = 'after the kill';
  await replicas[0]!.stop('SIGKILL');
  await waitFor('Envoy on replica 2', async () => (await replicaOf('failover-envoy')) === 2, 30_000, 100);
  const envoyMs = Date.now() - killedAt;
  // grpc-js reconnects its xDS channel when it next needs it or after backoff; an RPC keeps it busy.
  await waitFor('gRPC client on replica 2', async () => (await replicaOf('failover-grpc')) === 2, 30_000, 100);
  const grpcMs = Date.now() - killedAt;
  await new Promise((r) => setTimeout(r, 1500)); // traffic on, while they are on replica 2

  // A change after the kill reaches both clients through replica 2.
  phase = 'after the route change';
  editYamlDocs(join(root, 'services', 'failover.yaml'), (docs) => {
    docOf(docs, 'VirtualHost', 'fo').routes[0].to = 'fb';
  });
  editYamlDocs(join(root, 'services', 'grpc.yaml'), (docs) => {
    docOf(docs, 'GrpcService', 'greeter').routes[0].split = [
      { service: 'greeter-v1', weight: 0 },
      { service: 'greeter-v2', weight: 100 },
    ];
  });
  await waitFor(
    'Envoy routes to B',
    async () => (await httpGet(httpPort, '/x', 'any').catch(() => undefined))?.body === 'B',
    20_000,
  );
  await waitFor(
    'gRPC routes to GB',
    async () => (await grpcClient.sayHello('after').catch(() => undefined))?.backend === 'GB',
    20_000,
  );
  stop = true;
  await load;
  console.log(
    `failover: Envoy on replica 2 after ${envoyMs} ms, gRPC client after ${grpcMs} ms; ${requests} requests and ${rpcs} RPCs, ${failures.length} failed`,
  );
  assert.equal(failures, [], 'no request or RPC failed during the failover');
  assert.ok(requests > 40, `${requests} requests`);
});

test.run();
