/**
 * Least-request balancing (gRFC A48) for a gRPC-Go application (grpc-js has none): with one
 * backend answering at once and one taking 300 ms, RPCs sent 8 at a time go mostly to the quick
 * one, which has fewer in flight, where round robin sends half to each. The client is
 * test/grpc-go, with the bootstrap fleetxds generates.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { grpcBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { startBackend, type Backend } from '../helpers/greeter.ts';
import { runGoClient, spreadOf } from '../helpers/grpc-go.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

let app: RunningApp;
const backends: Backend[] = [];

test.before(async () => {
  const quick = await startBackend('quick');
  const slow = await startBackend('slow', { delayMs: 300 });
  backends.push(quick, slow);
  const endpoints = `[{ address: 127.0.0.1:${quick.port} }, { address: 127.0.0.1:${slow.port} }]`;
  app = await startServer(
    writeTree({
      'grpc.yaml': `kind: Service
name: least
protocol: grpc
lb: least_request
endpoints: ${endpoints}
---
kind: Service
name: rr
protocol: grpc
endpoints: ${endpoints}
---
kind: GrpcService
name: least
target: least.internal:50051
routes: [{ to: least }]
---
kind: GrpcService
name: rr
target: rr.internal:50051
routes: [{ to: rr }]
`,
    }),
  );
});

test.after(async () => {
  await app?.close();
  for (const b of backends) await b.close();
});

/** How many of 400 RPCs, 8 at a time, each backend answered. */
function spread(target: string): Promise<Record<string, number>> {
  const bootstrap = grpcBootstrap({ id: `go-${target}`, cluster: 'go' }, { host: '127.0.0.1', port: app.grpcPort });
  return spreadOf(runGoClient(target, bootstrap, ['-spread', '400', '-concurrency', '8']));
}

test('least request sends RPCs to the backend with fewer in flight; round robin to each in turn', async () => {
  const least = await spread('least.internal:50051');
  assert.is((least.quick ?? 0) + (least.slow ?? 0), 400, JSON.stringify(least));
  // Each pick compares two endpoints drawn with replacement (A48): a quarter of the draws are the
  // slow one twice, so it still gets about 27%; round robin gives it half.
  assert.ok((least.slow ?? 0) < 144, `least request: ${JSON.stringify(least)}`);
  const rr = await spread('rr.internal:50051');
  assert.ok((rr.slow ?? 0) >= 180, `round robin: ${JSON.stringify(rr)}`);
});

test.run();
