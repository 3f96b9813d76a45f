/**
 * Staged rollouts with proxyless gRPC clients (@grpc/grpc-js-xds): the canary client's RPCs move
 * to a new version while the other client's keep going to the old one; the canary's ACKs and a
 * soak promote it to the rest. A version the canary client NACKs (an lb policy grpc-js does not
 * support) halts the rollout: the other client keeps its routes and never sees it; abort.
 */
import { cpSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';
import {
  startBackend,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { spawnServer, waitFor, type ServerProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';
import { docOf, editYamlDocs, type Doc } from '../helpers/yaml-edit.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let root: string;
let server: ServerProcess;
let a: Backend, b: Backend;
let canary: GreeterClientHandle, fleet: GreeterClientHandle;

const editGrpc = (edit: (docs: Doc[]) => void) => editYamlDocs(join(root, 'services', 'grpc.yaml'), edit);
const split = (v1: number) => (docs: Doc[]) => {
  docOf(docs, 'GrpcService', 'greeter').routes[0].split = [
    { service: 'greeter-v1', weight: v1 },
    { service: 'greeter-v2', weight: 100 - v1 },
  ];
};

/** `n` RPCs in a row from `client` reach `backend`. */
async function routesTo(client: GreeterClientHandle, backend: string, n = 10): Promise<boolean> {
  for (let i = 0; i < n; i++) if ((await client.sayHello(`rpc-${i}`)).backend !== backend) return false;
  return true;
}

test.before(async () => {
  a = await startBackend('A');
  b = await startBackend('B');
  root = tempDir('fleetxds-grpc-rollout-');
  cpSync(projectPath('config'), root, { recursive: true });
  editGrpc((docs) => {
    docOf(docs, 'Service', 'greeter-v1').endpoints = [{ address: `127.0.0.1:${a.port}` }];
    docOf(docs, 'Service', 'greeter-v2').endpoints = [{ address: `127.0.0.1:${b.port}` }];
    split(100)(docs);
  });
  writeFileSync(
    join(root, 'services', 'rollout.yaml'),
    `kind: Rollout
name: staged
stages:
  - name: canary
    select: { idPattern: "canary-*" }
    gates: { soak: 3s }
# The gRPC clients here connect without credentials: the rollout must count them.
acceptUnauthenticatedNodes: true
`,
  );
  server = await spawnServer(join(root, 'fleetxds.yaml'), { FLEETXDS_DATABASE: join(root, 'state', 'x.db') });
  canary = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(server.grpcPort, 'canary-1'));
  fleet = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(server.grpcPort, 'fleet-1'));
  assert.ok(await routesTo(canary, 'A'));
  assert.ok(await routesTo(fleet, 'A'));
});

test.after(async () => {
  canary?.close();
  fleet?.close();
  await server?.stop('SIGKILL');
  await a?.close();
  await b?.close();
});

test('the canary client moves first; the rest follows once the canary ACKed and soaked', async () => {
  editGrpc(split(0));
  await waitFor('canary on v2', () => routesTo(canary, 'B'), 15_000, 50);
  const during = await server.admin('/api/v1/rollout');
  assert.is(during.rollout.status, 'progressing');
  assert.ok(await routesTo(fleet, 'A', 30), 'the other client still routes to v1 during the soak');
  await waitFor('promoted to the rest', () => routesTo(fleet, 'B'), 15_000, 100);
  const done = await server.admin('/api/v1/rollout');
  assert.is(done.last.status, 'complete');
});

test('a version the canary client NACKs halts the rollout; the other client never sees it', async () => {
  editGrpc((docs) => {
    docOf(docs, 'Service', 'greeter-v1').lb = 'least_request';
    split(100)(docs);
  });
  const halted = await waitFor(
    'halted',
    async () => {
      const r = await server.admin('/api/v1/rollout');
      return r.rollout?.status === 'halted' && r.rollout;
    },
    20_000,
  );
  assert.match(halted.halt.message, /least_request|LEAST_REQUEST/i, halted.halt.message);
  assert.is(halted.halt.nodeId, 'canary-1');
  assert.ok(await routesTo(fleet, 'B', 30), 'the other client keeps the previous version (v2)');
  const fleetNode = await server.admin('/api/v1/nodes/fleet-1');
  assert.is(fleetNode.nacks.length, 0, 'it never NACKed: it was never sent the version');
  const abort = await fetch(`http://127.0.0.1:${server.adminPort}/api/v1/rollout/abort`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  assert.is(abort.status, 200);
  assert.ok(await routesTo(fleet, 'B', 10));
  await waitFor('canary back on the previous version', () => routesTo(canary, 'B'), 15_000, 100);
});

test.run();
