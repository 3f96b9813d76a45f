/**
 * A route's timeout (gRFC A31) and a service's circuitBreaker.maxRequests (A32) in a
 * @grpc/grpc-js-xds client against fleetxds: an RPC to a backend slower than the route's timeout
 * fails with DEADLINE_EXCEEDED at the route's timeout, not the caller's deadline; with one request
 * allowed at a time, RPCs beyond it fail at once with UNAVAILABLE while the first is served.
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
let slow: Backend;
let timed: GreeterClientHandle;
let limited: GreeterClientHandle;

test.before(async () => {
  slow = await startBackend('slow', { delayMs: 1000 });
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: slow
protocol: grpc
endpoints: [{ address: 127.0.0.1:${slow.port} }]
---
kind: Service
name: one-at-a-time
protocol: grpc
endpoints: [{ address: 127.0.0.1:${slow.port} }]
circuitBreaker: { maxRequests: 1 }
---
kind: GrpcService
name: timed
target: timed.internal:50051
routes: [{ to: slow, timeout: 200ms }]
---
kind: GrpcService
name: limited
target: limited.internal:50051
routes: [{ to: one-at-a-time }]
`,
    }),
  );
  timed = xdsGreeterClient('timed.internal:50051', xdsBootstrap(app.grpcPort, 'timed-client'));
  limited = xdsGreeterClient('limited.internal:50051', xdsBootstrap(app.grpcPort, 'limited-client'));
  await limited.sayHello('warm-up', 10_000);
});

test.after(async () => {
  timed?.close();
  limited?.close();
  await app?.close();
  await slow?.close();
});

test("the route's timeout ends an RPC to a slower backend, well before the caller's deadline", async () => {
  await statusOf(timed.sayHello('warm-up', 10_000)); // the client has its config after this one
  const t0 = Date.now();
  assert.is(await statusOf(timed.sayHello('late', 5000)), status.DEADLINE_EXCEEDED);
  const took = Date.now() - t0;
  assert.ok(took >= 190 && took < 900, `failed after ${took} ms`);
});

test('one request at a time: the RPCs beyond it fail at once with UNAVAILABLE', async () => {
  const t0 = Date.now();
  const first = statusOf(limited.sayHello('first', 5000));
  await new Promise((r) => setTimeout(r, 50));
  const others = await Promise.all([1, 2, 3].map((i) => statusOf(limited.sayHello(`over-${i}`, 5000))));
  const refusedAfter = Date.now() - t0;
  assert.equal(others, [status.UNAVAILABLE, status.UNAVAILABLE, status.UNAVAILABLE]);
  assert.ok(refusedAfter < 800, `refused after ${refusedAfter} ms`);
  assert.is(await first, status.OK);
});

test.run();
