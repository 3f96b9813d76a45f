/**
 * A service named by DNS for proxyless gRPC (gRFC A37) with @grpc/grpc-js-xds against fleetxds: a
 * `dns.mode: logical` service becomes a LOGICAL_DNS cluster whose one host name the client
 * resolves itself, and RPCs reach the backend behind that name; when the name moves to another
 * port, the client follows.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import {
  startBackend,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let app: RunningApp;
let dir: string;
const backends: Backend[] = [];
let client: GreeterClientHandle;

const tree = (port: number) => `kind: Service
name: greeter-dns
protocol: grpc
dns: { host: localhost, port: ${port}, mode: logical }
---
kind: GrpcService
name: by-name
target: by-name.internal:50051
routes: [{ to: greeter-dns }]
`;

test.before(async () => {
  for (const n of ['first', 'second']) backends.push(await startBackend(n));
  dir = writeTree({ 'grpc.yaml': tree(backends[0]!.port) });
  app = await startServer(dir, { watch: true });
  client = xdsGreeterClient('by-name.internal:50051', xdsBootstrap(app.grpcPort, 'dns-client'));
});

test.after(async () => {
  client?.close();
  await app?.close();
  for (const b of backends) await b.close();
});

test('RPCs reach the backend behind the host name the client resolves', async () => {
  for (let i = 0; i < 5; i++) assert.is((await client.sayHello(`dns-${i}`, 10_000)).backend, 'first');
  assert.ok(backends[0]!.calls >= 5);
});

test('the name moved to another port: the client follows the new cluster', async () => {
  writeFileSync(join(dir, 'grpc.yaml'), tree(backends[1]!.port));
  await waitFor(
    'RPCs on the second backend',
    async () => (await client.sayHello('moved', 10_000)).backend === 'second',
    20_000,
  );
});

test.run();
