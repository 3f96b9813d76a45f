/**
 * 10,000 long-polls held at once by a server process, all released by one config change.
 * (A behaviour test: it asserts every poll is answered with the new version, not how fast.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnServer, waitFor } from '../helpers/process.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';
import { LONG_POLL, pollClusters as post } from '../helpers/rest-poll.ts';

const N = 10_000;
test(`${N} held polls are all released by one change`, async () => {
  const dir = writeTree(BASE);
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${dir}\ndatabase: ${join(tempDir(), 'x.db')}\ngrpc: { listen: 127.0.0.1:0 }\nadmin: { listen: ` +
      `127.0.0.1:0 }\nrest: { listen: 127.0.0.1:0, holdMs: 60000, requestTimeoutMs: 90000 }\nwatch: { ` +
      `debounceMs: 50, maxWaitMs: 500 }\nlog: { level: info }\n`,
  );
  const server = await spawnServer(settings);
  try {
    const first = await post(server.restPort, { node: { id: 'n', cluster: 'c' } });
    const v1 = first.version;
    const polls: ReturnType<typeof post>[] = [];
    for (let i = 0; i < N; i++) {
      polls.push(
        post(server.restPort, { node: { id: `node-${i}`, cluster: 'c', metadata: LONG_POLL }, version_info: v1 }),
      );
      if (i % 500 === 499) await new Promise((r) => setTimeout(r, 50)); // stay under the listen backlog
    }
    await waitFor(
      'all polls held',
      async () => (await server.admin('/api/v1/transports')).rest.heldPolls === N,
      60_000,
      200,
    );
    writeFileSync(
      join(dir, 'services.yaml'),
      BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 2s\n'),
    );
    const results = await Promise.all(polls);
    const byStatus: Record<number, number> = {};
    const versions = new Set<string>();
    for (const r of results) {
      byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
      if (r.version) versions.add(r.version);
    }
    assert.equal(byStatus, { 200: N });
    assert.is(versions.size, 1);
    assert.is.not([...versions][0], v1);
    assert.is((await server.admin('/api/v1/transports')).rest.heldPolls, 0);
  } finally {
    await server.stop('SIGKILL');
  }
});

test.run();
