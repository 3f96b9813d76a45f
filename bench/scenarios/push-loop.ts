/**
 * `npm run bench -- push-loop`: fleetxds's own work per stream for one push and for its ACK, in
 * process and without sockets (bench/lib/push-loop-run.ts), run bundled as the server is.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { bundleServer } from '../../src/build/build.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { SERVER_NODE_FLAGS } from '../../src/shared/runtime-flags.ts';
import type { PushLoopResult } from '../lib/push-loop-run.ts';

export type { PushLoopResult };

export async function pushLoop(streams: number, rounds: number): Promise<PushLoopResult> {
  const out = projectPath('dist', 'bench');
  await bundleServer(out, ['bench/lib/push-loop-run.ts']);
  const printed = execFileSync(
    process.execPath,
    [...SERVER_NODE_FLAGS, join(out, 'push-loop-run.js'), String(streams), String(rounds)],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  return JSON.parse(printed.trim().split('\n').pop()!) as PushLoopResult;
}
