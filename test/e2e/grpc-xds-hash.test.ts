/**
 * Session affinity for proxyless gRPC (gRFC A42) with @grpc/grpc-js-xds against fleetxds: a
 * GrpcService route hashing on a request header sends every RPC of a session to one backend of a
 * ring_hash service (and different sessions to different backends); a route hashing on the
 * channel id keeps each client channel on one backend.
 */
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
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let app: RunningApp;
const backends: Backend[] = [];
const clients: GreeterClientHandle[] = [];

test.before(async () => {
  for (const n of ['a', 'b', 'c']) backends.push(await startBackend(n));
  const endpoints = backends.map((b) => `{ address: 127.0.0.1:${b.port} }`).join(', ');
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: greeter
protocol: grpc
lb: ring_hash
endpoints: [${endpoints}]
---
kind: GrpcService
name: by-session
target: session.internal:50051
routes: [{ to: greeter, hashPolicy: [{ header: x-session }] }]
---
kind: GrpcService
name: by-channel
target: channel.internal:50051
routes: [{ to: greeter, hashPolicy: [{ channelId: true }] }]
`,
    }),
  );
});

test.after(async () => {
  for (const c of clients) c.close();
  await app?.close();
  for (const b of backends) await b.close();
});

function client(target: string, id: string): GreeterClientHandle {
  const c = xdsGreeterClient(target, xdsBootstrap(app.grpcPort, id));
  clients.push(c);
  return c;
}

test('a header hash policy: each session stays on one backend, sessions spread over the backends', async () => {
  const c = client('session.internal:50051', 'hash-session');
  const used = new Set<string>();
  for (let s = 0; s < 12; s++) {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add((await c.sayHello(`s${s}-${i}`, 5000, { 'x-session': `user-${s}` })).backend);
    assert.is(seen.size, 1, `session ${s} went to ${[...seen].join(', ')}`);
    used.add([...seen][0]!);
  }
  assert.ok(used.size >= 2, `12 sessions over ${used.size} backend(s)`);
  // One header value, 100 RPCs: all on one backend.
  const one = new Map<string, number>();
  for (let i = 0; i < 100; i++) {
    const b = (await c.sayHello(`same-${i}`, 5000, { 'x-session': 'user-100' })).backend;
    one.set(b, (one.get(b) ?? 0) + 1);
  }
  assert.equal([...one.values()], [100], `100 RPCs of one session: ${JSON.stringify(Object.fromEntries(one))}`);
});

test('a channel id hash policy: each channel stays on one backend, channels spread', async () => {
  const used = new Set<string>();
  for (let ch = 0; ch < 12; ch++) {
    const c = client('channel.internal:50051', `hash-channel-${ch}`);
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add((await c.sayHello(`c${ch}-${i}`)).backend);
    assert.is(seen.size, 1, `channel ${ch} went to ${[...seen].join(', ')}`);
    used.add([...seen][0]!);
  }
  assert.ok(used.size >= 2, `12 channels over ${used.size} backend(s)`);
});

test.run();
