/**
 * Retries of proxyless gRPC clients (gRFC A44) with @grpc/grpc-js-xds against fleetxds: an RPC
 * whose first two attempts fail with UNAVAILABLE succeeds on the third, and the client waits
 * between attempts as the route's backoff says. gRPC draws each wait at random below the current
 * backoff (A44), so the waits are compared over many RPCs: a 200 ms base waits far longer in all
 * than a 1 ms one.
 */
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import {
  GreeterDefinition,
  xdsBootstrap,
  xdsGreeterClient,
  type GreeterClientHandle,
  bindLoopback,
} from '../helpers/greeter.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let app: RunningApp;
let server: grpc.Server;
let client: GreeterClientHandle;
/** The time of each attempt, by request name. */
const attempts = new Map<string, number[]>();

test.before(async () => {
  server = new grpc.Server();
  server.addService(GreeterDefinition, {
    SayHello: (call: grpc.ServerUnaryCall<{ name: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const seen = attempts.get(call.request.name) ?? [];
      seen.push(performance.now());
      attempts.set(call.request.name, seen);
      if (seen.length <= 2) cb({ code: grpc.status.UNAVAILABLE, details: 'try again' });
      else cb(null, { message: 'hello', backend: 'flaky' });
    },
  });
  const port = await bindLoopback(server);
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: flaky
protocol: grpc
endpoints: [{ address: 127.0.0.1:${port} }]
---
kind: GrpcService
name: flaky
target: flaky.internal:50051
routes:
  - match: { headers: [{ name: x-slow, present: true }] }
    to: flaky
    retries: { on: [unavailable], count: 3, backoff: { base: 200ms, max: 400ms } }
  - to: flaky
    retries: { on: [unavailable], count: 3, backoff: { base: 1ms, max: 2ms } }
`,
    }),
  );
  client = xdsGreeterClient('flaky.internal:50051', xdsBootstrap(app.grpcPort, 'retry-client'));
});

test.after(async () => {
  client?.close();
  await app?.close();
  await new Promise<void>((r) => server.tryShutdown(() => r()));
});

/** The total wait between attempts over `n` RPCs, each failing twice before it succeeds. */
async function waits(prefix: string, n: number, metadata: Record<string, string>): Promise<number> {
  let total = 0;
  for (let i = 0; i < n; i++) {
    const name = `${prefix}-${i}`;
    assert.is((await client.sayHello(name, 10_000, metadata)).backend, 'flaky');
    const t = attempts.get(name)!;
    assert.is(t.length, 3, `${name}: two failed attempts and the one that succeeded`);
    total += t[2]! - t[0]!;
  }
  return total;
}

test('an RPC failing twice with UNAVAILABLE succeeds on its third attempt, after the waits its backoff gives', async () => {
  const quick = await waits('quick', 10, {});
  const slow = await waits('slow', 10, { 'x-slow': '1' });
  // 20 waits each drawn below 200 or 400 ms average about 3 s; below 1 or 2 ms, a few ms.
  assert.ok(slow > 1000, `waits with a 200 ms base: ${slow.toFixed(0)} ms in all`);
  assert.ok(
    quick < slow / 4,
    `waits with a 1 ms base: ${quick.toFixed(0)} ms in all (200 ms base: ${slow.toFixed(0)})`,
  );
});

test.run();
