/**
 * 10,000 REST long-polls held by the server process: server RSS while holding them, and time from
 * a config change (file write, including the watcher debounce) until all are answered.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../../test/helpers/process.ts';
import { serviceYaml } from '../lib/generate.ts';
import { benchServer } from '../lib/server.ts';
import { procStats } from '../lib/proc.ts';
import { pollClusters as post, type PollResult } from '../../test/helpers/rest-poll.ts';

/** Held polls are for proxies that opted into long polling (node metadata, as `fleetxds bootstrap` writes it). */
const LONG_POLL = { fleetxds: { long_poll_ms: 600_000 } };

export async function restScenario(n = 10_000): Promise<{
  held: number;
  rssIdleMB: number;
  rssHeldMB: number;
  perPollKB: number;
  releaseAllMs: number;
  answered200: number;
}> {
  const { server, cfg } = await benchServer(
    100,
    'rest: { listen: 127.0.0.1:0, holdMs: 120000, requestTimeoutMs: 150000 }\n',
  );
  try {
    const first = await post(server.restPort, { node: { id: 'n', cluster: 'c' } });
    const idle = procStats(server.child.pid!).rssMB;
    const polls: Promise<PollResult>[] = [];
    for (let i = 0; i < n; i++) {
      polls.push(
        post(server.restPort, {
          node: { id: `node-${i}`, cluster: 'c', user_agent_name: 'envoy', metadata: LONG_POLL },
          version_info: first.version,
        }),
      );
      if (i % 500 === 499) await new Promise((r) => setTimeout(r, 50));
    }
    await waitFor('held', async () => (await server.admin('/api/v1/transports')).rest.heldPolls === n, 120_000, 200);
    const held = procStats(server.child.pid!).rssMB;
    const t0 = Date.now();
    // A cluster change (the polls are CDS polls): one service's connect timeout.
    writeFileSync(
      join(cfg, 'services', 'svc-0.yaml'),
      Array.from({ length: 100 }, (_, i) =>
        serviceYaml(i).replace(i === 0 ? 'connectTimeout: 2s' : '\u0000', 'connectTimeout: 3s'),
      ).join('---\n'),
    );
    const results = await Promise.all(polls);
    return {
      held: n,
      rssIdleMB: Math.round(idle),
      rssHeldMB: Math.round(held),
      perPollKB: Math.round((((held - idle) * 1024) / n) * 10) / 10,
      releaseAllMs: Math.max(...results.map((r) => r.at)) - t0,
      answered200: results.filter((r) => r.status === 200).length,
    };
  } finally {
    await server.stop('SIGKILL');
  }
}
