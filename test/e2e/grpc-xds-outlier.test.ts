/**
 * Outlier detection that proxyless gRPC honours (gRFC A50), with @grpc/grpc-js-xds: of three
 * backends one fails every RPC; with failure-percentage ejection the client stops sending to it
 * within a few intervals, and RPCs succeed on the other two.
 */
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import {
  bindLoopback,
  GreeterDefinition,
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
let a: Backend, b: Backend;
let failing: grpc.Server;
let failingPort: number;
let failingCalls = 0;
let client: GreeterClientHandle;

test.before(async () => {
  [a, b] = [await startBackend('a'), await startBackend('b')];
  failing = new grpc.Server();
  failing.addService(GreeterDefinition, {
    SayHello: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      failingCalls++;
      cb({ code: grpc.status.INTERNAL, details: 'always failing' });
    },
  });
  failingPort = await bindLoopback(failing);
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: greeter
protocol: grpc
endpoints: [{ address: 127.0.0.1:${a.port} }, { address: 127.0.0.1:${b.port} }, { address: 127.0.0.1:${failingPort} }]
outlierDetection:
  interval: 1s
  baseEjectionTime: 30s
  maxEjectionPercent: 50
  failurePercentage: { threshold: 50, minimumHosts: 3, requestVolume: 5 }
---
kind: GrpcService
name: greeter
target: greeter.internal:50051
routes: [{ to: greeter }]
`,
    }),
  );
  client = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(app.grpcPort, 'grpc-outlier'));
});

test.after(async () => {
  client?.close();
  await app?.close();
  await a?.close();
  await b?.close();
  failing?.forceShutdown();
});

test('a backend failing every RPC is ejected; then every RPC succeeds on the others', async () => {
  const round = async (n: number) => {
    let failed = 0;
    for (let i = 0; i < n; i++) await client.sayHello(`rpc-${i}`).catch(() => failed++);
    return failed;
  };
  await waitFor('the failing backend is ejected', async () => (await round(30)) === 0, 20_000, 100);
  const calls = failingCalls;
  assert.is(await round(60), 0, 'no RPC fails once it is ejected');
  assert.is(failingCalls, calls, 'the ejected backend gets no RPC');
  assert.ok(calls > 0, 'it did get RPCs before');
});

test.run();
