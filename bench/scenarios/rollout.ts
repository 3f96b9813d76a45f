/**
 * What a staged rollout costs: N ADS clients in two processes (prefixes c0-* and c1-*), a Rollout
 * whose canary stage selects c0-*. Measured on the server process: CPU and RSS for a one-route
 * change served to everyone at once (no rollout), then the same change as a rollout (the canary
 * half gets it; the rest stays on the previous version), then its promotion to the rest. The
 * difference in RSS while two versions are served, per stream, is the memory a rollout costs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { vhostYaml } from '../lib/generate.ts';
import { benchServer } from '../lib/server.ts';
import { percentile, procStats } from '../lib/proc.ts';
import { waitMsg } from './fanout.ts';
import { runWhenMain } from '../lib/main.ts';

export interface RolloutCost {
  n: number;
  plainCpuSeconds: number;
  plainP99: number;
  canaryCpuSeconds: number;
  canaryP99: number;
  promoteCpuSeconds: number;
  promoteP99: number;
  rssBeforeMB: number;
  rssDuringMB: number;
  rssKBPerStreamDuring: number;
}

export async function rolloutCost(n: number): Promise<RolloutCost> {
  const { server, cfg } = await benchServer();
  const children: ChildProcess[] = [];
  try {
    for (let p = 0; p < 2; p++) {
      children.push(
        fork(
          projectPath('bench', 'lib', 'ads-load-client.ts'),
          [String(server.grpcPort), String(n / 2), 'sotw', `c${p}`, 'edge-0'],
          { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
        ),
      );
    }
    await waitMsg(children, 'ready', 300_000);
    let edit = 0;
    const routeChange = () =>
      writeFileSync(join(cfg, 'routes', 'vh-0.yaml'), vhostYaml(0, 100, 100).replace('/api/r7/', `/api/r7-${++edit}/`));
    const measure = async (who: ChildProcess[], change: () => unknown) => {
      for (const c of children) c.send({ type: 'watch', typeUrl: TypeUrls.route });
      await waitMsg(children, 'watching', 10_000);
      const before = procStats(server.child.pid!);
      const t0 = Date.now();
      await change();
      const acked = await waitMsg(who, 'acked', 120_000);
      const after = procStats(server.child.pid!);
      return {
        cpu: after.cpuSeconds - before.cpuSeconds,
        p99: percentile(
          acked.flatMap((m) => m.times.map((t: number) => t - t0)),
          99,
        ),
        rss: after.rssMB,
      };
    };
    const plain = await measure(children, routeChange);
    writeFileSync(
      join(cfg, 'rollout.yaml'),
      'kind: Rollout\nname: bench\nstages:\n  - name: canary\n    select: { idPattern: "c0-*" }\n' +
        '    gates: { soak: 1h }\nacceptUnauthenticatedNodes: true\n',
    );
    await new Promise((r) => setTimeout(r, 1000)); // the policy alone: applied, nothing served changes
    const rssBefore = procStats(server.child.pid!).rssMB;
    const canary = await measure([children[0]!], routeChange);
    const rssDuring = procStats(server.child.pid!).rssMB;
    const promote = await measure([children[1]!], () =>
      fetch(`http://127.0.0.1:${server.adminPort}/api/v1/rollout/promote`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return {
      n,
      plainCpuSeconds: r2(plain.cpu),
      plainP99: plain.p99,
      canaryCpuSeconds: r2(canary.cpu),
      canaryP99: canary.p99,
      promoteCpuSeconds: r2(promote.cpu),
      promoteP99: promote.p99,
      rssBeforeMB: Math.round(rssBefore),
      rssDuringMB: Math.round(rssDuring),
      rssKBPerStreamDuring: Math.round(((rssDuring - rssBefore) * 1024) / n),
    };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await server.stop('SIGKILL');
  }
}

runWhenMain(import.meta.url, (args) => rolloutCost(Number(args[0] ?? 1000)));
