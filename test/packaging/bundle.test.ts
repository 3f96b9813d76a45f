/**
 * The server as `npm run build` deploys it: bundled by esbuild into one folder (src/packaging/build.ts).
 * Built here into a folder of its own and run as a process: it validates the example config, and it
 * serves a tree large enough to be parsed by a worker, over two serving threads, so both workers'
 * URLs are checked from inside the bundle (a parse worker that fails to start is a warning on stderr),
 * and the status page's script is served from the file the build put beside it.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bundleServer } from '../../src/packaging/build.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { connect, T } from '../helpers/ads-client.ts';
import { spawnServer } from '../helpers/process.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

// Inside the project, as dist/server is: the bundle finds proto/ and migrations/ above it.
const out = projectPath('dist', `bundle-test-${process.pid}`);
const entry = join(out, 'main.js');

/** Services nothing routes to, to make the tree big enough for a parse worker (over 256 KB in 2 files). */
function padding(file: number): string {
  return Array.from(
    { length: 2500 },
    (_, i) => `kind: Service\nname: pad-${file}-${i}\nendpoints:\n  - address: 10.9.${file}.${i % 250}:8080\n`,
  ).join('---\n');
}

test.before(async () => {
  await bundleServer(out);
});
test.after(() => rmSync(out, { recursive: true, force: true }));

test('the bundled command line validates the example config', () => {
  const r = spawnSync(process.execPath, [entry, 'validate', projectPath('config', 'services')], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /valid/);
});

test('the bundled server parses in a worker and serves from its serving threads', async () => {
  const dir = writeTree({ ...BASE, 'pad-1.yaml': padding(1), 'pad-2.yaml': padding(2) });
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${dir}\ndatabase: ${join(tempDir(), 'x.db')}\ngrpc: { listen: 127.0.0.1:0, threads: 2 }\n` +
      `admin: { listen: 127.0.0.1:0 }\nwatch: { enabled: false }\nlog: { level: info }\n`,
  );
  const server = await spawnServer(settings, {}, { entry });
  const clients = Array.from({ length: 4 }, () => connect(server.grpcPort));
  try {
    const answers = await Promise.all(
      clients.map(async (c, i) => {
        const s = c.open();
        s.send({ node: { id: `n${i}`, cluster: 'c' }, type_url: T.cluster });
        return s.next();
      }),
    );
    for (const a of answers) assert.is(a.resources.length, 2, 'the clusters of the two services routed to');
    assert.not.match(server.output(), /FLEETXDS_PARSE_WORKER|Error/, server.output());
    const status = (await server.admin('/api/v1/config')) as { versionId: number };
    assert.is(status.versionId, 1);
    // The status page's script, bundled beside the server rather than built when asked.
    const page = await fetch(`http://127.0.0.1:${server.adminPort}/assets/fleet-page.js`);
    assert.is(page.status, 200);
    assert.match(await page.text(), /fleet\/nodes/);
  } finally {
    for (const c of clients) c.close();
    await server.stop();
  }
});

test.run();
