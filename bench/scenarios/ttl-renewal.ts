/**
 * Overrides with an xDS TTL at rest: N simulated Envoys (separate processes, one ADS stream each,
 * subscribed to both runtime layers) hold an overrides layer of `keys` values, and the server
 * renews it every third of the TTL (SotW: the layer again; delta: a heartbeat). Nothing changes
 * meanwhile. The server's CPU is measured over the same window twice, as a share of one core: with
 * the streams idle before the override exists, then over several renewal rounds; the difference is
 * what the renewals cost. The streams' count of runtime responses over the window checks they
 * happened.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { procStats } from '../lib/proc.ts';
import { benchServer } from '../lib/server.ts';
import { forkLoadClients, waitMsg } from './fanout.ts';
import { runWhenMain } from '../lib/main.ts';

export interface TtlRenewalResult {
  streams: number;
  mode: 'sotw' | 'delta';
  keys: number;
  ttlMs: number;
  windowS: number;
  /** Server CPU over the window, percent of one core: the streams idle, then renewing. */
  idleCpuPercent: number;
  cpuPercent: number;
  /** What the renewals cost: the difference. */
  renewalCpuPercent: number;
  /** Renewals each stream received over the window (about window / (TTL / 3)). */
  renewalsPerStream: number;
}

/** An override of `keys` runtime values for every group, for an hour. */
function overrideYaml(keys: number): string {
  const values = Array.from({ length: keys }, (_, i) => `  bench.override.k${i}: ${i}`).join('\n');
  return `kind: Runtime\nname: bench-override\nfor: 1h\nvalues:\n${values}\n`;
}

export async function ttlRenewal(
  streams: number,
  mode: 'sotw' | 'delta',
  keys = 1000,
  ttlMs = 30_000,
  windowMs = 60_000,
): Promise<TtlRenewalResult> {
  const { server, cfg } = await benchServer(100, '', `{ listen: 127.0.0.1:0, overrideTtlMs: ${ttlMs} }`);
  const children: ChildProcess[] = [];
  try {
    forkLoadClients(children, server.grpcPort, streams, mode, 2);
    await waitMsg(children, 'ready', 300_000);
    const cpuShare = async () => {
      const before = procStats(server.child.pid!);
      await new Promise((r) => setTimeout(r, windowMs));
      return ((procStats(server.child.pid!).cpuSeconds - before.cpuSeconds) / (windowMs / 1000)) * 100;
    };
    const idle = await cpuShare();
    writeFileSync(join(cfg, 'override.yaml'), overrideYaml(keys));
    // The watcher's debounce and the push, then a third of the TTL: every stream's renewals run.
    await new Promise((r) => setTimeout(r, 2000 + ttlMs / 3));
    const count = async () => {
      for (const c of children) c.send({ type: 'runtime-responses' });
      return (await waitMsg(children, 'runtime-responses', 10_000)).reduce((a, m) => a + (m.count as number), 0);
    };
    const responsesBefore = await count();
    const renewing = await cpuShare();
    const renewals = (await count()) - responsesBefore;
    return {
      streams,
      mode,
      keys,
      ttlMs,
      windowS: windowMs / 1000,
      idleCpuPercent: Number(idle.toFixed(2)),
      cpuPercent: Number(renewing.toFixed(2)),
      renewalCpuPercent: Number((renewing - idle).toFixed(2)),
      renewalsPerStream: Number((renewals / streams).toFixed(1)),
    };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    // SIGTERM when profiling: the CPU profile is written at exit.
    await server.stop(process.env.FLEETXDS_CPU_PROF ? 'SIGTERM' : 'SIGKILL');
  }
}

runWhenMain(import.meta.url, (args) =>
  ttlRenewal(Number(args[0] ?? 1000), (args[1] ?? 'sotw') as 'sotw' | 'delta', 1000, 30_000, Number(args[2] ?? 60_000)),
);
