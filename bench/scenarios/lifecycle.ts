/**
 * Edit to first 200 through real Envoy 1.40 (the shape of gateway-api-bench's route lifecycle):
 * `changes` sequential changes, each adding a route to a virtual host of `routes` routes, timed from
 * the moment the operator starts the change to the first HTTP 200 on the new route through Envoy,
 * while a steady loop of requests on existing routes counts every answer that is not a 200. Paths:
 * `api`, the file renamed into place and the admin API asked to apply the directory (what
 * `fleetxds apply` does); `file`, the file renamed into place and the watcher left to apply it
 * (its default debounce).
 */
import http from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { envoyBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { SERVER_ENTRY } from '../../src/shared/paths.ts';
import { writeFileAtomic } from '../../src/shared/atomic-write.ts';
import { freePort, startEnvoy } from '../../test/helpers/envoy.ts';
import { spawnServer } from '../../test/helpers/process.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { runWhenMain } from '../lib/main.ts';
import { percentile } from '../lib/proc.ts';

export type LifecyclePath = 'api' | 'file';

export interface LifecycleResult {
  path: LifecyclePath;
  routes: number;
  changes: number;
  /** From the file renamed into place and the apply asked for, to the first 200 on the new route. */
  meanMs: number;
  p99Ms: number;
  maxMs: number;
  /** Until the apply call answered (the version stored and pushed); none for the watcher. */
  applyMeanMs: number;
  /** Answers other than 200 on existing routes during the whole run, of how many. */
  errors: number;
  steadyRequests: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

function get(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

function vhostYaml(routes: number, added: number): string {
  const lines = ['kind: VirtualHost', 'name: site', 'domains: ["*"]', 'routes:'];
  for (let i = 0; i < added; i++) lines.push(`  - { match: { path: /new/${i} }, to: api }`);
  for (let i = 0; i < routes; i++) lines.push(`  - { match: { path: /r/${i} }, to: api }`);
  return `${lines.join('\n')}\n`;
}

export async function lifecycle(
  routes: number,
  changes: number,
  path: LifecyclePath = 'api',
): Promise<LifecycleResult> {
  const backend = http.createServer((req, res) => {
    req.resume();
    res.end('ok');
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const backendPort = (backend.address() as { port: number }).port;
  const dir = tempDir('fleetxds-lifecycle-');
  const cfg = join(dir, 'cfg');
  mkdirSync(cfg);
  const port = await freePort();
  writeFileSync(
    join(cfg, 'api.yaml'),
    `kind: Service\nname: api\nendpoints: [{ address: 127.0.0.1:${backendPort} }]\n`,
  );
  writeFileSync(
    join(cfg, 'listener.yaml'),
    `kind: Listener\nname: site\naddress: 127.0.0.1\nport: ${port}\nvirtualHosts: [site]\n`,
  );
  const vhost = join(cfg, 'site.yaml');
  writeFileSync(vhost, vhostYaml(routes, 0));
  const settings = join(dir, 'fleetxds.yaml');
  // Over the API, no watcher: the apply the operator asks for is the only one.
  writeFileSync(
    settings,
    `configDir: ${cfg}\ndatabase: ${join(dir, 'x.db')}\ngrpc: { listen: 127.0.0.1:0 }\n` +
      `admin: { listen: 127.0.0.1:0 }\nwatch: { enabled: ${path === 'file'} }\nlog: { level: info }\n`,
  );
  const server = await spawnServer(settings, {}, { entry: SERVER_ENTRY });
  const envoy = await startEnvoy(
    '1.40',
    envoyBootstrap({
      mode: 'ads',
      nodeId: 'lifecycle-1',
      nodeCluster: 'default',
      server: { host: '127.0.0.1', port: server.grpcPort },
    }),
    tempDir(),
  );
  let steady = true;
  let errors = 0;
  let steadyRequests = 0;
  const loop = (async () => {
    for (let i = 0; steady; i++) {
      if ((await get(port, `/r/${i % routes}`)) !== 200) errors++;
      steadyRequests++;
    }
  })();
  try {
    while ((await get(port, '/r/0')) !== 200) await new Promise((r) => setTimeout(r, 50));
    errors = 0;
    steadyRequests = 0;
    const times: number[] = [];
    const applied: number[] = [];
    for (let c = 0; c < changes; c++) {
      const t0 = performance.now();
      await writeFileAtomic(vhost, vhostYaml(routes, c + 1), 0o644);
      // The proxy is asked while the apply is under way: the time does not wait for the answer.
      const applying =
        path === 'file'
          ? undefined
          : fetch(`http://127.0.0.1:${server.adminPort}/api/v1/apply`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{}',
            }).then(async (res) => {
              applied.push(performance.now() - t0);
              return (await res.json()) as { status: string };
            });
      while ((await get(port, `/new/${c}`)) !== 200)
        if (performance.now() - t0 > 10_000) throw new Error(`change ${c}: no 200 after 10 s`);
      const out = await applying;
      if (out && out.status !== 'applied') throw new Error(`change ${c}: ${JSON.stringify(out)}`);
      times.push(performance.now() - t0);
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    return {
      path,
      routes,
      changes,
      meanMs: Number(mean(times).toFixed(1)),
      p99Ms: Number(percentile(times, 99).toFixed(1)),
      maxMs: Number(Math.max(...times).toFixed(1)),
      applyMeanMs: applied.length ? Number(mean(applied).toFixed(1)) : NaN,
      errors,
      steadyRequests,
    };
  } finally {
    steady = false;
    await loop;
    await envoy.stop();
    // SIGTERM when profiling: the CPU profile is written at exit.
    await server.stop(process.env.FLEETXDS_CPU_PROF ? 'SIGTERM' : 'SIGKILL');
    backend.close();
    agent.destroy();
  }
}

runWhenMain(import.meta.url, (args) =>
  lifecycle(Number(args[0] ?? 1000), Number(args[1] ?? 1000), (args[2] ?? 'api') as LifecyclePath),
);
