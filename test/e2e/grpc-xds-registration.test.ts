/**
 * Registered endpoints and proxyless gRPC: @grpc/grpc-js-xds picks an endpoint registered at run
 * time, and stops picking it after the one push that says it is unhealthy (gRPC ignores active
 * health checks; EDS health_status is what it honours).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
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

const TOKEN = 'grpc-registration-token';
let app: RunningApp;
let a: Backend, b: Backend, c: Backend;
let client: GreeterClientHandle;

async function heartbeat(health: 'healthy' | 'unhealthy'): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${app.restPort}/v1/services/greeter/endpoints/127.0.0.1:${c.port}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ health }),
  });
  return r.status;
}

async function backendsOf(n: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) seen.add((await client.sayHello(`rpc-${i}`)).backend);
  return seen;
}

test.before(async () => {
  [a, b, c] = [await startBackend('a'), await startBackend('b'), await startBackend('c')];
  const digest = createHash('sha256').update(TOKEN).digest('hex');
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: greeter
protocol: grpc
endpoints: [{ address: 127.0.0.1:${a.port} }, { address: 127.0.0.1:${b.port} }]
registration: { tokens: ["${digest}"], addresses: [127.0.0.0/8], ttl: 60s }
---
kind: GrpcService
name: greeter
target: greeter.internal:50051
routes: [{ to: greeter }]
`,
    }),
    { rest: {} },
  );
  client = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(app.grpcPort, 'grpc-registration'));
  await client.sayHello('warm-up');
});

test.after(async () => {
  client?.close();
  await app?.close();
  for (const x of [a, b, c]) await x?.close();
});

test('a registered endpoint is picked; after the push that marks it unhealthy, it is not', async () => {
  assert.is(await heartbeat('healthy'), 200);
  await waitFor('the client picks c', async () => (await backendsOf(12)).has('c'), 10_000, 50);
  const versionBefore = app.cache.current!.versionId;
  assert.is(await heartbeat('unhealthy'), 200);
  // One EDS push (no new config version): once the client has taken it, c is never picked again.
  await waitFor('the client stops picking c', async () => !(await backendsOf(12)).has('c'), 10_000, 20);
  const after = await backendsOf(60);
  assert.not.ok(after.has('c'), `picked after it was marked unhealthy: ${[...after].join(', ')}`);
  assert.equal([...after].sort(), ['a', 'b']);
  assert.is(app.cache.current!.versionId, versionBefore, 'membership makes no config version');
});

test.run();
