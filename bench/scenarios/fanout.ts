/**
 * Fan-out: N simulated Envoys (separate processes, one HTTP/2 connection and ADS stream each) on
 * the real server process. Time from writing a one-route change to every client holding the new
 * RouteConfiguration (p50/p99/max, including the watcher's debounce), server CPU and RSS; then
 * bytes each client receives for a one-endpoint change; then a runtime value and a token-policy
 * edit (an extension config) for every stream, beside the one-route change.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { policyEdit, serviceYaml, vhostYaml } from '../lib/generate.ts';
import { extensionConfigName } from '../../src/translate/features.ts';
import { benchServer } from '../lib/server.ts';
import { percentile, procStats } from '../lib/proc.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { runWhenMain } from '../lib/main.ts';

export interface FanoutResult {
  n: number;
  mode: 'sotw' | 'delta';
  p50: number;
  p99: number;
  max: number;
  serverCpuSeconds: number;
  serverRssMB: number;
  bytesPerClientEndpointChange: number;
  bytesPerClientRouteChange: number;
  /** A runtime value set for every group: p99 ms until every stream ACKed the layer, and server CPU s. */
  runtimeP99: number;
  runtimeCpuSeconds: number;
  /** Every listener's token keys rotated (ECDS): p99 ms until every stream ACKed, and server CPU s. */
  policyP99: number;
  policyCpuSeconds: number;
}

const RDS = TypeUrls.route;
const EDS = TypeUrls.endpoint;
const RTDS = TypeUrls.runtime;
const ECDS = TypeUrls.extension;

export function waitMsg(children: ChildProcess[], type: string, timeoutMs: number): Promise<any[]> {
  return Promise.all(
    children.map(
      (c) =>
        new Promise((resolve, reject) => {
          const t = setTimeout(() => reject(new Error(`timeout waiting for ${type}`)), timeoutMs);
          const on = (m: any) => {
            if (m.type !== type) return;
            clearTimeout(t);
            c.off('message', on);
            resolve(m);
          };
          c.on('message', on);
        }),
    ),
  );
}

/**
 * `n` ADS streams on the server at `port`, spread over `procs` load-client processes (pushed into
 * `into`, so the caller kills them whatever happens); `zones`: the zones their nodes run in.
 */
export function forkLoadClients(
  into: ChildProcess[],
  port: number,
  n: number,
  mode: 'sotw' | 'delta',
  procs: number,
  zones: readonly string[] = [],
  extensions: readonly string[] = [],
): void {
  for (let p = 0; p < procs; p++) {
    const count = Math.floor(n / procs) + (p < n % procs ? 1 : 0);
    into.push(
      fork(
        projectPath('bench', 'lib', 'ads-load-client.ts'),
        [String(port), String(count), mode, `c${p}`, 'edge-0', zones.join(','), extensions.join(',')],
        { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
      ),
    );
  }
}

export async function fanout(n: number, mode: 'sotw' | 'delta', clientProcs = 2): Promise<FanoutResult> {
  // The listener requires a token: its JWT filter's config is an extension config (ECDS).
  const { server, cfg } = await benchServer(100, '', undefined, { policy: true });
  const children: ChildProcess[] = [];
  try {
    const jwt = extensionConfigName('edge-0', 'envoy.filters.http.jwt_authn');
    forkLoadClients(children, server.grpcPort, n, mode, clientProcs, [], [jwt]);
    await waitMsg(children, 'ready', 300_000);
    const measure = async (typeUrl: string, change: () => void) => {
      children.forEach((c) => {
        c.send({ type: 'watch', typeUrl });
      });
      await waitMsg(children, 'watching', 10_000);
      const before = procStats(server.child.pid!);
      const t0 = Date.now();
      change();
      const acked = await waitMsg(children, 'acked', 120_000);
      const after = procStats(server.child.pid!);
      const lat = acked.flatMap((m) => m.times.map((t: number) => t - t0));
      const bytes = acked.flatMap((m) => m.bytes as number[]);
      return { lat, bytes, cpu: after.cpuSeconds - before.cpuSeconds, rss: after.rssMB };
    };
    const route = await measure(RDS, () =>
      writeFileSync(join(cfg, 'routes', 'vh-0.yaml'), vhostYaml(0, 100, 100).replace('/api/r7/', '/api/r7-moved/')),
    );
    const eds = await measure(EDS, () =>
      writeFileSync(
        join(cfg, 'services', 'svc-0.yaml'),
        [serviceYaml(0, 7), ...Array.from({ length: 99 }, (_, i) => serviceYaml(i + 1))].join('---\n'),
      ),
    );
    // A runtime value for every group: one RTDS layer each, no listener, route or cluster touched.
    const runtime = await measure(RTDS, () =>
      writeFileSync(
        join(cfg, 'runtime.yaml'),
        'kind: Runtime\nname: bench\nvalues: { upstream.healthy_panic_threshold: 30 }\n',
      ),
    );
    // The token keys rotated: the listener's JWT extension config alone changes.
    const listeners = join(cfg, 'listeners.yaml');
    const policy = await measure(ECDS, () => writeFileSync(listeners, policyEdit(readFileSync(listeners, 'utf8'))));
    const avg = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    return {
      n,
      mode,
      p50: percentile(route.lat, 50),
      p99: percentile(route.lat, 99),
      max: Math.max(...route.lat),
      serverCpuSeconds: Number(route.cpu.toFixed(2)),
      serverRssMB: Math.round(route.rss),
      bytesPerClientRouteChange: avg(route.bytes),
      bytesPerClientEndpointChange: avg(eds.bytes),
      runtimeP99: percentile(runtime.lat, 99),
      runtimeCpuSeconds: Number(runtime.cpu.toFixed(2)),
      policyP99: percentile(policy.lat, 99),
      policyCpuSeconds: Number(policy.cpu.toFixed(2)),
    };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    // SIGTERM when profiling: the CPU profile is written at exit.
    await server.stop(process.env.FLEETXDS_CPU_PROF ? 'SIGTERM' : 'SIGKILL');
  }
}

runWhenMain(import.meta.url, (args) => fanout(Number(args[0] ?? 1000), (args[1] ?? 'sotw') as 'sotw' | 'delta'));
