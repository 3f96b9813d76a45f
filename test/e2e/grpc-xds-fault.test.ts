/**
 * Fault injection for proxyless gRPC (gRFC A33) with @grpc/grpc-js-xds against fleetxds: a route's
 * `fault.abort` fails its RPCs in the client with the status given, without reaching the backend;
 * its `fault.delay` holds them before they are sent; other routes are untouched. Routes matching
 * header values exactly or by prefix (gRFC A63) show which route an RPC took by their faults.
 */
import { createRequire } from 'node:module';
import { status } from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import {
  startBackend,
  statusOf,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let app: RunningApp;
let backend: Backend;
let client: GreeterClientHandle;

test.before(async () => {
  backend = await startBackend('only');
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: greeter
protocol: grpc
endpoints: [{ address: 127.0.0.1:${backend.port} }]
---
kind: GrpcService
name: chaos
target: chaos.internal:50051
routes:
  - match: { headers: [{ name: x-fail, present: true }] }
    to: greeter
    fault: { abort: { status: resource-exhausted, percent: 100 } }
  - match: { headers: [{ name: x-slow, present: true }] }
    to: greeter
    fault: { delay: { fixed: 400ms, percent: 100 } }
  # Header values matched exactly and by prefix (string matchers, gRFC A63).
  - match: { headers: [{ name: x-tier, exact: gold }] }
    to: greeter
    fault: { abort: { status: permission-denied, percent: 100 } }
  - match: { headers: [{ name: x-tier, prefix: plat }] }
    to: greeter
    fault: { abort: { status: out-of-range, percent: 100 } }
  - to: greeter
`,
    }),
  );
  client = xdsGreeterClient('chaos.internal:50051', xdsBootstrap(app.grpcPort, 'fault-client'));
  await client.sayHello('warm-up', 10_000);
});

test.after(async () => {
  client?.close();
  await app?.close();
  await backend?.close();
});

test('an abort fault fails the RPC in the client with its status; the backend never sees it', async () => {
  const before = backend.calls;
  for (let i = 0; i < 5; i++) {
    const err = await client.sayHello(`fail-${i}`, 5000, { 'x-fail': '1' }).then(
      () => undefined,
      (e: { code?: number; details?: string }) => e,
    );
    assert.is(err?.code, status.RESOURCE_EXHAUSTED, `RPC ${i}: ${err?.details}`);
  }
  assert.is(backend.calls, before);
});

test('a delay fault holds the RPC before it is sent; a route without faults is untouched', async () => {
  const t0 = Date.now();
  assert.is((await client.sayHello('slow', 5000, { 'x-slow': '1' })).backend, 'only');
  const slow = Date.now() - t0;
  assert.ok(slow >= 390, `delayed ${slow} ms`);
  const calls = backend.calls;
  assert.is((await client.sayHello('plain', 5000)).backend, 'only');
  assert.is(backend.calls, calls + 1);
});

test('header values are matched exactly and by prefix: each value takes its own route', async () => {
  const code = (tier: string) => statusOf(client.sayHello(`tier-${tier}`, 5000, { 'x-tier': tier }));
  assert.is(await code('gold'), status.PERMISSION_DENIED);
  assert.is(await code('golden'), status.OK);
  assert.is(await code('platinum'), status.OUT_OF_RANGE);
  assert.is(await code('silver'), status.OK);
});

test.run();
