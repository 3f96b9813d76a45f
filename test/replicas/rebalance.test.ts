/**
 * A replica that comes back gets its share again, without a reconnect storm: 16 clients that
 * balance their streams over both replicas (round robin over one `ipv4:` target listing them, as
 * Envoy's xDS cluster does over its endpoints) all sit on replica 1 while replica 2 is down. Once
 * replica 2 is up, grpc.maxConnectionAgeMs (with grpc-js's ±10% jitter) moves them gradually:
 * within a few ages a good share is on replica 2, and the reconnects are spread over time.
 */
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { rawAdsClient } from '../helpers/raw-ads.ts';
import { freePort } from '../helpers/envoy.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const Client = rawAdsClient();

/** A client that keeps one ADS stream open, reopening it when it ends (as Envoy does). */
function persistentClient(target: string, id: string, reconnects: number[]) {
  const client = new Client(target, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  });
  let closed = false;
  const open = () => {
    const call = client.S();
    call.on('data', () => {});
    call.on('error', () => {});
    call.on('status', () => {
      if (closed) return;
      reconnects.push(Date.now());
      setTimeout(() => closed || open(), 50);
    });
    call.write({ node: { id, cluster: 'c' }, type_url: TypeUrls.cluster });
  };
  open();
  return () => {
    closed = true;
    client.close();
  };
}

test('a replica that comes back gets its share, by connection age, spread over time', async () => {
  const dir = writeTree(BASE);
  const port = await freePort();
  const grpcSettings = { maxConnectionAgeMs: 1500, maxConnectionAgeGraceMs: 100 };
  const r1 = await startServer(dir, { grpcListen: `127.0.0.1:${port}`, grpc: grpcSettings });
  const reconnects: number[] = [];
  const target = `ipv4:127.0.0.1:${port},127.0.0.2:${port}`;
  const closers = Array.from({ length: 16 }, (_, i) => persistentClient(target, `rb-${i}`, reconnects));
  let r2: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    await waitFor('all on replica 1', () => r1.registry.connected().length === 16, 10_000);
    r2 = await startServer(dir, { grpcListen: `127.0.0.2:${port}`, grpc: grpcSettings });
    const since = Date.now();
    await waitFor('replica 2 has a share', () => r2!.registry.connected().length >= 4, 15_000, 100);
    // Two connection ages later: every connection was aged once, at its own jittered time.
    await new Promise((r) => setTimeout(r, Math.max(0, since + 3500 - Date.now())));
    const moved = reconnects.filter((t) => t >= since);
    assert.ok(moved.length >= 8, `${moved.length} reconnects`);
    const spread = Math.max(...moved) - Math.min(...moved);
    assert.ok(spread >= 150, `reconnects spread over ${spread} ms, not all at once`);
    assert.ok(r2.registry.connected().length >= 4, `replica 2 serves ${r2.registry.connected().length} of 16`);
    const total = r1.registry.connected().length + r2.registry.connected().length;
    assert.ok(total >= 12, `streams are served throughout (${total} of 16 connected right now)`);
  } finally {
    for (const close of closers) close();
    await r2?.close();
    await r1.close();
  }
});

test.run();
