/**
 * Failover by distance at scale: 1,000 services with endpoints in three zones, 5,000 ADS streams
 * spread over those zones (each stream's node says its zone), one endpoint of one service moved.
 * The same run with and without `locality: { failover: true }` on every service: the time until
 * every stream has ACKed the change (p99), the server's CPU for it, and its RSS. With locality each
 * zone's streams get a view of their own; the target is that this costs at most 1.2x.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { percentile, procStats } from '../lib/proc.ts';
import { benchServer } from '../lib/server.ts';
import { forkLoadClients, waitMsg } from './fanout.ts';

export interface LocalityResult {
  locality: string;
  services: number;
  streams: number;
  /** ms from the file write until each stream ACKed the change; the median of the changes. */
  endpointP99: number;
  /** Server CPU seconds per change (median). */
  endpointCpu: number;
  serverRssMB: number;
}

const ZONES = ['a', 'b', 'c'];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function localityRun(
  services: number,
  streams: number,
  locality: boolean,
  changes = 3,
  clientProcs = 4,
): Promise<LocalityResult> {
  const { server, cfg } = await benchServer(services, '', '{ listen: 127.0.0.1:0 }', { locality });
  const children: ChildProcess[] = [];
  try {
    forkLoadClients(children, server.grpcPort, streams, 'sotw', clientProcs, ZONES);
    await waitMsg(children, 'ready', 600_000);
    const file = join(cfg, 'services', 'svc-0.yaml');
    const original = readFileSync(file, 'utf8');
    const p99s: number[] = [];
    const cpus: number[] = [];
    for (let c = 1; c <= changes; c++) {
      children.forEach((child) => child.send({ type: 'watch', typeUrl: TypeUrls.endpoint }));
      await waitMsg(children, 'watching', 10_000);
      const before = procStats(server.child.pid!);
      const t0 = Date.now();
      // One endpoint of svc-0 (zone a) moves to another address.
      writeFileSync(file, original.replace('10.0.0.1:8080', `10.0.0.${200 + c}:8080`));
      const acked = await waitMsg(children, 'acked', 120_000);
      const after = procStats(server.child.pid!);
      p99s.push(
        percentile(
          acked.flatMap((m: { times: number[] }) => m.times.map((t) => t - t0)),
          99,
        ),
      );
      cpus.push(after.cpuSeconds - before.cpuSeconds);
    }
    children.forEach((child) => child.send({ type: 'errors' }));
    const ended = (await waitMsg(children, 'errors', 10_000)).flatMap((m: { errors: Record<string, number> }) =>
      Object.entries(m.errors),
    );
    // Streams the server ended while 5,000 subscribed at once come back, as Envoys do; say how many.
    if (ended.length)
      process.stderr.write(`locality ${locality}: streams ended and opened again: ${JSON.stringify(ended)}\n`);
    return {
      locality: locality ? 'failover' : 'none',
      services,
      streams,
      endpointP99: median(p99s),
      endpointCpu: Number(median(cpus).toFixed(2)),
      serverRssMB: Math.round(procStats(server.child.pid!).rssMB),
    };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await server.stop('SIGKILL');
  }
}
