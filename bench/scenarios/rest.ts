/**
 * Held REST long-polls, fleetxds beside the floor of the machine (bare node:http holding the same
 * polls and answering them with the same bytes, bench/lib/bare-http-poll.ts). Each server is
 * pinned to one core and the load client (bench/lib/rest-poll-client.ts, N long-polling proxies on
 * N connections) to the other. Per server: RSS idle and with N polls held, and the time from the
 * change (fleetxds: the write of a service file, so the watcher's debounce and the pipeline are
 * in it; the floor: the signal to answer) until the client has every answer, with the server's
 * CPU for it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../../test/helpers/process.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { libHarness } from '../lib/event-process.ts';
import { serviceYaml } from '../lib/generate.ts';
import { CLIENT_CORE, pin, procStats, SERVER_CORE, sleep } from '../lib/proc.ts';
import { benchServer } from '../lib/server.ts';
import { LONG_POLL } from '../../test/helpers/rest-poll.ts';

export type RestServerName = 'fleetxds' | 'bare-http';

export type RestResult = {
  server: RestServerName;
  held: number;
  rssIdleMB: number;
  rssHeldMB: number;
  perPollKB: number;
  releaseAllMs: number;
  releaseCpu: number;
  answered200: number;
  mbSent: number;
};

interface Target {
  pid: number;
  port: number;
  /** The version the polls report (they are held while it is current). */
  version: string;
  /** Resolves once n polls are held. */
  held(n: number): Promise<void>;
  /** Starts the change that answers them; returns when it started. */
  release(): number;
  stop(): Promise<void>;
}

/** A long-polling proxy's first poll, with the exact bytes fleetxds answers it with. */
async function firstPoll(port: number): Promise<{ version: string; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/v3/discovery:clusters`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ node: { id: 'n', cluster: 'c', metadata: LONG_POLL } }),
  });
  const body = await res.text();
  return { version: (JSON.parse(body) as { version_info: string }).version_info, body };
}

async function startFleetxds(): Promise<Target & { body: string }> {
  const { server, cfg } = await benchServer(
    100,
    'rest: { listen: 127.0.0.1:0, holdMs: 120000, requestTimeoutMs: 150000 }\n',
  );
  pin(server.child.pid!, SERVER_CORE);
  const { version, body } = await firstPoll(server.restPort);
  return {
    pid: server.child.pid!,
    port: server.restPort,
    version,
    body,
    held: async (n) =>
      void (await waitFor(
        'held',
        async () => (await server.admin('/api/v1/transports')).rest.heldPolls === n,
        120_000,
        200,
      )),
    release: () => {
      const t0 = Date.now();
      // A cluster change (the polls are CDS polls): one service's connect timeout.
      writeFileSync(
        join(cfg, 'services', 'svc-0.yaml'),
        Array.from({ length: 100 }, (_, i) =>
          serviceYaml(i).replace(i === 0 ? 'connectTimeout: 2s' : '\u0000', 'connectTimeout: 3s'),
        ).join('---\n'),
      );
      return t0;
    },
    stop: async () => void (await server.stop(process.env.FLEETXDS_CPU_PROF ? 'SIGTERM' : 'SIGKILL')),
  };
}

async function startFloor(body: string, n: number): Promise<Target> {
  const file = join(tempDir('fleetxds-rest-floor-'), 'body.json');
  writeFileSync(file, body);
  const p = libHarness('bare-http-poll.ts', [file, n]);
  const held = p.next('held');
  const { port } = await p.next('listening', 60_000);
  pin(p.child.pid!, SERVER_CORE);
  return {
    pid: p.child.pid!,
    port,
    version: 'v1',
    held: async () => void (await held),
    release: () => {
      const t0 = Date.now();
      p.child.kill('SIGHUP');
      return t0;
    },
    stop: async () => {
      p.child.kill('SIGKILL');
      await new Promise((r) => p.child.once('exit', r));
    },
  };
}

async function measure(name: RestServerName, target: Target, n: number): Promise<RestResult> {
  try {
    await sleep(500);
    const idle = procStats(target.pid).rssMB;
    const client = libHarness('rest-poll-client.ts', [target.port, n, target.version]);
    pin(client.child.pid!, CLIENT_CORE);
    try {
      const done = client.next('done');
      await client.next('sent');
      await target.held(n);
      await sleep(500);
      const held = procStats(target.pid);
      const t0 = target.release();
      const r = await done;
      return {
        server: name,
        held: n,
        rssIdleMB: Math.round(idle),
        rssHeldMB: Math.round(held.rssMB),
        perPollKB: Math.round((((held.rssMB - idle) * 1024) / n) * 10) / 10,
        releaseAllMs: r.lastAt - t0,
        releaseCpu: Number((procStats(target.pid).cpuSeconds - held.cpuSeconds).toFixed(2)),
        answered200: r.answered200,
        mbSent: Math.round(r.bytes / 1e6),
      };
    } finally {
      client.child.kill('SIGKILL');
    }
  } finally {
    await target.stop();
  }
}

/** fleetxds, then the floor answering with the bytes fleetxds sent. */
export async function restScenario(n = 10_000): Promise<RestResult[]> {
  const fleetxds = await startFleetxds();
  const body = fleetxds.body;
  const ours = await measure('fleetxds', fleetxds, n);
  return [ours, await measure('bare-http', await startFloor(body, n), n)];
}
