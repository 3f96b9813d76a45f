/**
 * `npm run bench -- push-loop`: fleetxds's own work per stream for one push and for its ACK, in
 * process and without sockets (bench/lib/push-loop-run.ts), run bundled as the server is.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { bundleServer } from '../../src/packaging/build.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { SERVER_NODE_FLAGS } from '../../src/shared/runtime-flags.ts';
import type { PushLoopResult } from '../lib/push-loop-run.ts';

export type { PushLoopResult };

const OUT = projectPath('dist', 'bench');

/** Bundles the run (once per run of the suite, before the first point). */
export async function buildPushLoop(): Promise<void> {
  await bundleServer(OUT, ['bench/lib/push-loop-run.ts']);
}

export function pushLoop(
  protocol: 'sotw' | 'delta',
  services: number,
  streams: number,
  rounds: number,
): PushLoopResult {
  const printed = execFileSync(
    process.execPath,
    [...SERVER_NODE_FLAGS, join(OUT, 'push-loop-run.js'), String(streams), String(rounds), protocol, String(services)],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  return JSON.parse(printed.trim().split('\n').pop()!) as PushLoopResult;
}
