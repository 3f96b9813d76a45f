/**
 * Expiring overrides in the running server: fleetxds applies the tree again at the deadline and
 * serves a version without what lapsed, audited as its own; a `for` window counts from the version
 * that first served it across restarts; an override that lapsed while the server was down is left
 * out by the first read after the restart; a rollback is not undone by a deadline.
 */
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { runCliAsync, waitFor } from '../helpers/process.ts';
import { cliSettings, startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

/** The base tree with a maintenance answer, first among the routes of `site`, carrying `window`. */
const withWindow = (window: string) => ({
  ...BASE,
  'edge.yaml': BASE['edge.yaml']!.replace(
    'routes:\n',
    `routes:\n  - { match: { prefix: /maintenance }, directResponse: { status: 503 }, ${window} }\n`,
  ),
});

/** Whether the served routes still have the override. */
function serves(app: RunningApp): boolean {
  const routes = app.cache.current!.groups.get('default')!.types.route.resources;
  return JSON.stringify([...routes.values()].map((r) => r.json)).includes('/maintenance');
}

const expiries = (app: RunningApp) => app.stores.audit.list().filter((a) => a.action === 'override-expired');

test('a `for` window counts from the version that first served it, across a restart', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(withWindow('for: 2s'));
  const started = Date.now();
  const first = await startServer(dir, { database: db });
  assert.ok(serves(first));
  await new Promise((r) => setTimeout(r, 800));
  await first.close();
  const second = await startServer(dir, { database: db });
  try {
    assert.ok(serves(second), 'still served after the restart');
    const listed = (await (await fetch(`http://127.0.0.1:${second.adminPort}/api/v1/overrides`)).json()) as {
      overrides: { what: string; started: string; deadline: string; expired: boolean }[];
    };
    assert.is(listed.overrides.length, 1);
    const [o] = listed.overrides;
    assert.is(o!.what, 'route 1 of VirtualHost "site"');
    assert.is(Date.parse(o!.deadline) - Date.parse(o!.started), 2000);
    assert.ok(
      Date.parse(o!.started) >= started - 50 && Date.parse(o!.started) < started + 800,
      'started at the first start',
    );
    assert.is(o!.expired, false);
    await waitFor('the window lapsed', async () => !serves(second), 5000, 20);
    const took = Date.now() - started;
    // Counted from the first start (2 s), not from the restart (which would make it 2.8 s or more).
    assert.ok(took >= 1900 && took < 2700, `lapsed after ${took} ms`);
    const [entry] = expiries(second);
    assert.ok(entry);
    assert.is(entry.actor, 'fleetxds');
    const detail = JSON.parse(entry.detail) as { what: string; versionId: number };
    assert.is(detail.what, 'route 1 of VirtualHost "site"');
    assert.is(detail.versionId, second.cache.current!.versionId);
  } finally {
    await second.close();
  }
});

test('an override that lapsed while the server was down is left out by the first read after the restart', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(withWindow('for: 1s'));
  const first = await startServer(dir, { database: db });
  assert.ok(serves(first));
  await first.close();
  await new Promise((r) => setTimeout(r, 1300));
  const second = await startServer(dir, { database: db });
  try {
    assert.not.ok(serves(second));
    assert.is(expiries(second).length, 1);
    const rejection = second.stores.rejections.latest();
    assert.is(rejection, undefined, 'the tree still holding the lapsed override is not refused');
  } finally {
    await second.close();
  }
});

test('a rollback is not undone at a deadline: the version the operator chose stays until the directory changes', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  try {
    const v1 = app.cache.current!.versionId;
    writeTree(withWindow('for: 1s'), dir);
    assert.is(((await app.reload()) as { status: string }).status, 'applied');
    assert.ok(serves(app));
    const res = await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/rollback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ versionId: v1 }),
    });
    assert.is(res.status, 200, await res.text());
    const rolledBack = app.cache.current!.versionId;
    await new Promise((r) => setTimeout(r, 1500));
    assert.is(app.cache.current!.versionId, rolledBack);
    assert.is(expiries(app).length, 0);
  } finally {
    await app.close();
  }
});

test('`fleetxds overrides` lists them through the admin API, soonest first', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(withWindow('for: 2h'));
  const app = await startServer(dir, { database: db });
  try {
    const settings = cliSettings(dir, db, app);
    const cli = await runCliAsync(['overrides', '--config', settings]);
    assert.is(cli.status, 0, cli.stderr);
    assert.match(cli.stdout, /^\d{4}-\d\d-\d\dT[\d:.]+Z {2}in 2h {9}route 1 of VirtualHost "site"\n$/);
  } finally {
    await app.close();
  }
});

test.run();
