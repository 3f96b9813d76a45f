/**
 * Restart: time from starting the (built) server process to the first ADS response served from the
 * last good version in SQLite, for a database holding the given config. The clock stops when the
 * response has arrived, before the client decodes it (decoding 10,000 clusters to JSON took this
 * client about 0.3 s, which the figure used to include).
 */
import * as grpc from '@grpc/grpc-js';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVER_ENTRY } from '../../src/shared/paths.ts';
import { SERVER_NODE_FLAGS } from '../../src/shared/runtime-flags.ts';
import { T } from '../../test/helpers/ads-client.ts';
import { decodeToJson, encodeJson } from '../../src/xds/proto-json.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { sleep } from '../lib/proc.ts';

export async function restartScenario(
  configDir: string,
  database: string,
): Promise<{ msToFirstResponse: number; clusters: number }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const settings = join(tempDir('fleetxds-bench-'), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${configDir}\ndatabase: ${database}\ngrpc: { listen: 127.0.0.1:${port} }\nadmin: { listen: ` +
      `127.0.0.1:0 }\nlog: { level: warn }\n`,
  );
  const t0 = Date.now();
  // FLEETXDS_CPU_PROF=DIR: the server writes its CPU profile there (it is stopped with SIGTERM then).
  const prof = process.env.FLEETXDS_CPU_PROF;
  const child = spawn(
    process.execPath,
    [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      ...SERVER_NODE_FLAGS,
      SERVER_ENTRY,
      'serve',
      '--config',
      settings,
    ],
    { stdio: 'ignore' },
  );
  const request = Buffer.from(
    encodeJson('envoy.service.discovery.v3.DiscoveryRequest', {
      node: { id: 'restart-probe', cluster: 'x' },
      type_url: T.cluster,
    }).bytes,
  );
  try {
    for (;;) {
      const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
        'grpc.max_receive_message_length': -1,
      });
      const call = client.makeBidiStreamRequest(
        '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
        (b: Buffer) => b,
        (b: Buffer) => b,
      );
      try {
        const body = await new Promise<Buffer>((resolve, reject) => {
          call.once('data', resolve);
          call.once('error', reject);
          call.once('end', () => reject(new Error('stream ended')));
          setTimeout(() => reject(new Error('no answer')), 5_000).unref();
          call.write(request);
        });
        const ms = Date.now() - t0;
        call.cancel();
        client.close();
        const r = decodeToJson('envoy.service.discovery.v3.DiscoveryResponse', body) as { resources?: unknown[] };
        return { msToFirstResponse: ms, clusters: r.resources?.length ?? 0 };
      } catch {
        call.cancel();
        client.close();
        if (Date.now() - t0 > 60_000) throw new Error('server never answered');
        await sleep(20);
      }
    }
  } finally {
    if (prof) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    } else child.kill('SIGKILL');
  }
}
