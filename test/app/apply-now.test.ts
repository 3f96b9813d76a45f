/**
 * Applying the config directory now, without the watcher (a change known to be complete):
 * `fleetxds apply` through the admin API. A new tree becomes a version, the same tree is
 * "unchanged", and a refused one exits 1 with its file:line while the served version stays; every
 * call is in the audit log with its actor.
 */
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCliAsync } from '../helpers/process.ts';
import { cliSettings, startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

test('`fleetxds apply`: a new version at once, the same tree unchanged, a refused tree exits 1 at its file:line', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(BASE);
  // The watcher is off: only an apply makes a version.
  const app = await startServer(dir, { database: db });
  try {
    const settings = cliSettings(dir, db, app);
    const apply = () => runCliAsync(['apply', '--config', settings]);
    const same = await apply();
    assert.is(same.status, 0, same.stderr);
    assert.match(same.stdout, /^unchanged: version 1 is this tree\n$/);

    writeTree({ 'edge.yaml': BASE['edge.yaml']!.replace('port: 8080', 'port: 8081') }, dir);
    const changed = await apply();
    assert.is(changed.status, 0, changed.stderr);
    assert.match(changed.stdout, /^applied: version 2\n$/);
    assert.is(app.cache.current?.versionId, 2, 'served at once');

    writeTree({ 'edge.yaml': BASE['edge.yaml']!.replace('to: web', 'to: nowhere') }, dir);
    const refused = await apply();
    assert.is(refused.status, 1);
    assert.match(refused.stdout, /^edge\.yaml:\d+:\d+: error FXDS_\w+: .*nowhere/m);
    assert.match(refused.stdout, /rejected: the served version stays\n$/);
    assert.is(app.cache.current?.versionId, 2);

    const audit = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/audit`)).json()) as {
      audit: { actor: string; action: string; detail: string }[];
    };
    const applies = audit.audit.filter((a) => a.action === 'apply').reverse();
    assert.equal(
      applies.map((a) => (JSON.parse(a.detail) as { status: string }).status),
      ['unchanged', 'applied', 'rejected'],
    );
    assert.match(applies[0]!.actor, /@cli$/);
  } finally {
    await app.close();
  }
});

test.run();
