/**
 * End to end with a client nobody here wrote: the server runs as a process on (a copy of) the
 * bundled example config, real gRPC backends serve, and @grpc/grpc-js-xds routes RPCs on
 * xds:///greeter.internal:50051 by the config fleetxds serves. Config changes are made by editing
 * the YAML files; nothing is restarted.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { docOf, editYamlDocs, type Doc } from '../helpers/yaml-edit.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import {
  startBackend,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { spawnServer, waitFor, type ServerProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

const TARGET = 'greeter.internal:50051';
let root: string;
let server: ServerProcess;
let a: Backend, b: Backend, c: Backend;
let client: GreeterClientHandle;

function editGrpcYaml(edit: (docs: Doc[]) => void): void {
  editYamlDocs(join(root, 'services', 'grpc.yaml'), edit);
}

const doc = docOf;

async function tally(n: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const r = await client.sayHello(`rpc-${i}`);
    counts[r.backend] = (counts[r.backend] ?? 0) + 1;
  }
  return counts;
}

/** Waits until `n` RPCs in a row reach `backend`. */
async function followsTo(backend: string, n = 20): Promise<void> {
  await waitFor(
    `RPCs routed to ${backend}`,
    async () => {
      const t = await tally(n);
      return t[backend] === n;
    },
    20_000,
    50,
  );
}

test.before(async () => {
  [a, b, c] = await Promise.all([startBackend('A'), startBackend('B'), startBackend('C')]);
  root = tempDir('fleetxds-e2e-');
  cpSync(projectPath('config'), root, { recursive: true });
  editGrpcYaml((docs) => {
    doc(docs, 'Service', 'greeter-v1').endpoints = [{ address: `127.0.0.1:${a.port}` }];
    doc(docs, 'Service', 'greeter-v2').endpoints = [{ address: `127.0.0.1:${b.port}` }];
  });
  server = await spawnServer(join(root, 'fleetxds.yaml'), { FLEETXDS_DATABASE: join(root, 'state', 'fleetxds.db') });
  client = xdsGreeterClient(TARGET, xdsBootstrap(server.grpcPort, 'e2e-client-1'));
});

test.after(async () => {
  client?.close();
  await server?.stop('SIGKILL');
  await Promise.all([a, b, c].map((x) => x?.close()));
});

test('RPCs follow the canary split of the example config (80/20 between v1 and v2)', async () => {
  const counts = await tally(200);
  assert.ok((counts.A ?? 0) > 0 && (counts.B ?? 0) > 0, `both versions get traffic: ${JSON.stringify(counts)}`);
  assert.is((counts.A ?? 0) + (counts.B ?? 0), 200);
  assert.ok(counts.A! > counts.B!, `v1 (weight 80) gets more than v2 (weight 20): ${JSON.stringify(counts)}`);
  assert.is(c.calls, 0);
});

test('the node and its ACKs show in the status API', async () => {
  const node = await waitFor('node status', async () => {
    const n = await server.admin('/api/v1/nodes/e2e-client-1');
    return n.streams?.length ? n : undefined;
  });
  const s = node.streams[0];
  assert.is(s.group, 'default');
  assert.match(s.userAgent, /gRPC Node/);
  for (const type of ['Listener', 'RouteConfiguration', 'Cluster', 'ClusterLoadAssignment']) {
    const key = Object.keys(s.types).find((k) => k.endsWith(`.${type}`))!;
    assert.ok(key, `${type} was served`);
    assert.is(s.types[key].ackedVersion, s.types[key].sentVersion, `${type} ACKed`);
  }
});

test('a weight change in the YAML moves all traffic without restarting anything', async () => {
  editGrpcYaml((docs) => {
    const route = doc(docs, 'GrpcService', 'greeter').routes[0];
    route.split = [
      { service: 'greeter-v1', weight: 0 },
      { service: 'greeter-v2', weight: 100 },
    ];
  });
  await followsTo('B');
  const counts = await tally(50);
  assert.equal(counts, { B: 50 });
});

test('an endpoint change in the YAML moves traffic to the new backend', async () => {
  editGrpcYaml((docs) => {
    doc(docs, 'Service', 'greeter-v2').endpoints = [{ address: `127.0.0.1:${c.port}` }];
  });
  await followsTo('C');
  assert.equal(await tally(30), { C: 30 });
});

test('an invalid tree is rejected and the client keeps working on the last good config', async () => {
  const before = await server.admin('/api/v1/config');
  const file = join(root, 'services', 'grpc.yaml');
  const good = readFileSync(file, 'utf8');
  writeFileSync(file, good.replace('kind: GrpcService', 'kind: GrpcService\nunknownField: 1'));
  const rejection = await waitFor('rejection recorded', async () => {
    const r = await server.admin('/api/v1/rejections/latest');
    return r.diagnostics ? r : undefined;
  });
  assert.ok(rejection.diagnostics.some((d: any) => d.code === 'FXDS_UNKNOWN_FIELD' && d.location.file === 'grpc.yaml'));
  assert.equal(await tally(20), { C: 20 });
  assert.is((await server.admin('/api/v1/config')).versionId, before.versionId);
  writeFileSync(file, good);
});

test('a config the client rejects is recorded as a NACK for that node, with its error text', async () => {
  editGrpcYaml((docs) => {
    doc(docs, 'Service', 'greeter-v2').lb = 'least_request'; // valid for Envoy, unsupported by grpc-js 1.14
  });
  const nack = await waitFor('NACK recorded', async () => {
    const n = await server.admin('/api/v1/nodes/e2e-client-1');
    return n.nacks?.[0];
  });
  assert.is(nack.nodeId, 'e2e-client-1');
  assert.is(nack.typeUrl, TypeUrls.cluster);
  assert.match(nack.message, /LEAST_REQUEST/);
  const node = await server.admin('/api/v1/nodes/e2e-client-1');
  const cds = node.streams[0].types[TypeUrls.cluster];
  assert.match(cds.lastNack.message, /LEAST_REQUEST/);
  assert.is.not(cds.ackedVersion, cds.sentVersion, 'the NACKed version is not ACKed');
  // The client keeps routing with what it had accepted.
  assert.equal(await tally(20), { C: 20 });
});

test.run();
