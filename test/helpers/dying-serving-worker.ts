/**
 * A serving thread that fails as a bug would (an uncaught error) when the second config is
 * published to it, before serving it, if it is thread 1 and the file named by
 * FLEETXDS_TEST_DIE_MARKER does not exist yet (it creates it, so the thread started again in its
 * place lives). Otherwise the real thread.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import type { ThreadSettings, ToThread } from '../../src/transports/grpc/serving.ts';

const marker = process.env.FLEETXDS_TEST_DIE_MARKER;
if ((workerData as ThreadSettings).index === 1 && marker && !existsSync(marker)) {
  let publishes = 0;
  // Registered before the real thread's listener, so it runs first and the publish is never served.
  parentPort!.on('message', (m: ToThread) => {
    if (m.type !== 'publish' || ++publishes < 2) return;
    writeFileSync(marker, 'died once');
    throw new Error('a serving thread failing on purpose (test)');
  });
}

await import('../../src/transports/grpc/serving-worker.ts');
