/**
 * Endpoints registered at run time, at fleet scale: 10,000 endpoints across 1,000 services
 * heartbeating every 10 s (1,000 heartbeats a second over keep-alive HTTP), 1,000 SotW ADS
 * streams holding every service's endpoints. The server runs alone on one core. Measured:
 *  - the server's CPU share for heartbeats alone, and whether any stream got a push meanwhile;
 *  - with 1% of the endpoints changing health at once (100), the time until every stream has ACKed
 *    the new endpoints (p50, p99 over streams and trials).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { projectPath } from '../../src/shared/paths.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { CLIENT_CORE, percentile, pin, procStats, SERVER_CORE, sleep } from '../lib/proc.ts';
import { benchServer } from '../lib/server.ts';
import { waitMsg } from './fanout.ts';
import { runWhenMain } from '../lib/main.ts';

const TOKEN = 'bench-registration-token';

export interface RegistrationResult {
  endpoints: number;
  services: number;
  streams: number;
  heartbeatsPerSecond: number;
  heartbeatCpuPercent: number;
  pushesDuringHeartbeats: number;
  healthChangeP50Ms: number;
  healthChangeP99Ms: number;
}

export async function registrationScenario(
  services = 1000,
  perService = 10,
  streams = 1000,
  seconds = 20,
): Promise<RegistrationResult> {
  const digest = createHash('sha256').update(TOKEN).digest('hex');
  const { server } = await benchServer(services, 'rest: { listen: 127.0.0.1:0 }\n', undefined, {
    registrationToken: digest,
  });
  pin(server.child.pid!, SERVER_CORE);
  pin(process.pid, CLIENT_CORE);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const put = (svc: number, ep: number, health: 'healthy' | 'unhealthy') =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: server.restPort,
          method: 'PUT',
          path: `/v1/services/svc-${svc}/endpoints/10.${200 + (svc >> 8)}.${svc & 255}.${ep + 1}:8080`,
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          agent,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ health }));
    });
  const health = new Map<number, 'healthy' | 'unhealthy'>();
  const all = Array.from({ length: services * perService }, (_, i) => i);
  const beat = (i: number) => put(Math.floor(i / perService), i % perService, health.get(i) ?? 'healthy');
  const children: ChildProcess[] = [];
  try {
    // Everyone registers.
    for (let i = 0; i < all.length; i += 200) await Promise.all(all.slice(i, i + 200).map(beat));
    for (let p = 0; p < 2; p++)
      children.push(
        fork(
          projectPath('bench', 'lib', 'ads-load-client.ts'),
          [String(server.grpcPort), String(streams / 2), 'sotw', `r${p}`, 'edge-0'],
          { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
        ),
      );
    for (const c of children) pin(c.pid!, CLIENT_CORE);
    await waitMsg(children, 'ready', 300_000);
    // Heartbeats only: a tenth of the endpoints every second, for `seconds`.
    const watchEds = async () => {
      for (const c of children) c.send({ type: 'watch', typeUrl: TypeUrls.endpoint });
      await waitMsg(children, 'watching', 10_000);
    };
    await watchEds();
    let pushes = 0;
    const onPush = (m: { type: string }) => {
      if (m.type === 'acked') pushes++;
    };
    for (const c of children) c.on('message', onPush);
    const before = procStats(server.child.pid!);
    const t0 = Date.now();
    let sent = 0;
    for (let s = 0; s < seconds; s++) {
      const tick = Date.now();
      const slice = all.filter((i) => i % 10 === s % 10);
      for (let i = 0; i < slice.length; i += 100) await Promise.all(slice.slice(i, i + 100).map(beat));
      sent += slice.length;
      await sleep(Math.max(0, 1000 - (Date.now() - tick)));
    }
    const after = procStats(server.child.pid!);
    const elapsed = (Date.now() - t0) / 1000;
    for (const c of children) c.off('message', onPush);
    // 1% change health at once, five times; every stream must have it.
    const lat: number[] = [];
    for (let trial = 0; trial < 5; trial++) {
      await watchEds();
      const changed = all.filter((i) => i % 100 === trial);
      for (const i of changed) health.set(i, health.get(i) === 'unhealthy' ? 'healthy' : 'unhealthy');
      const start = Date.now();
      await Promise.all(changed.map(beat));
      const acked = await waitMsg(children, 'acked', 60_000);
      lat.push(...acked.flatMap((m) => (m.times as number[]).map((t) => t - start)));
      await sleep(500);
    }
    return {
      endpoints: all.length,
      services,
      streams,
      heartbeatsPerSecond: Math.round(sent / elapsed),
      heartbeatCpuPercent: Number(((100 * (after.cpuSeconds - before.cpuSeconds)) / elapsed).toFixed(1)),
      pushesDuringHeartbeats: pushes,
      healthChangeP50Ms: percentile(lat, 50),
      healthChangeP99Ms: percentile(lat, 99),
    };
  } finally {
    agent.destroy();
    for (const c of children) c.kill('SIGKILL');
    await server.stop('SIGKILL');
  }
}

runWhenMain(import.meta.url, (args) =>
  registrationScenario(Number(args[0] ?? 1000), Number(args[1] ?? 10), Number(args[2] ?? 1000)),
);
