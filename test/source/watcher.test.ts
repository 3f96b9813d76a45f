/**
 * Live config from a watched directory: bursts, editor saves, deletes, and symlink swaps of the
 * directory itself (the git post-receive layout).
 */
import { mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const versions = (app: RunningApp) => app.stores.revisions.list().length;
const clusterNames = (app: RunningApp) => [...app.cache.current!.groups.get('default')!.types.cluster.resources.keys()];
const quiet = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a burst of writes gives one new version', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir, { watch: true });
  try {
    assert.is(versions(app), 1);
    for (let i = 0; i < 30; i++)
      writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.replace('10.0.1.1:80', `10.0.1.${i + 2}:80`));
    await waitFor('new version', () => versions(app) === 2);
    await quiet(500);
    assert.is(versions(app), 2, 'one version for the whole burst');
    const eds = app.cache.current!.groups.get('default')!.types.endpoint.resources.get('web')!.json as any;
    assert.is(
      eds.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address,
      '10.0.1.31',
      'the last write wins',
    );
  } finally {
    await app.close();
  }
});

test('a file written after the first read, before the watch is armed, is applied without waiting for the reconcile', async () => {
  // Many plain files make the watch take a while to be armed; the new file is written as soon as
  // the first version is in the database, while the server is still starting.
  const notes: Record<string, string> = {};
  for (let i = 0; i < 3000; i++) notes[`notes/${i % 30}/${i}.txt`] = 'x';
  const dir = writeTree({ ...BASE, ...notes });
  const database = join(tempDir(), 'fleetxds.db');
  let written = false;
  const writer = setInterval(() => {
    if (written) return;
    try {
      const db = new Database(database, { readonly: true, fileMustExist: true });
      const n = (db.prepare('SELECT count(*) AS n FROM config_versions').get() as { n: number }).n;
      db.close();
      if (n < 1) return;
    } catch {
      return;
    }
    written = true;
    writeFileSync(join(dir, 'late.yaml'), 'kind: Service\nname: late\nendpoints: [{ address: 10.9.9.9:80 }]\n');
  }, 1);
  const app = await startServer(dir, { watch: true, database });
  try {
    clearInterval(writer);
    assert.ok(written, 'the file was written during the start');
    await waitFor('the late file applied', () => versions(app) === 2, 5_000);
  } finally {
    clearInterval(writer);
    await app.close();
  }
});

test('an editor save by rename is applied; a half-written file is rejected and the last good version kept', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir, { watch: true });
  try {
    writeFileSync(join(dir, '.services.yaml.swp'), 'garbage: [');
    writeFileSync(join(dir, 'services.yaml~'), BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.77:80'));
    renameSync(join(dir, 'services.yaml~'), join(dir, 'services.yaml'));
    await waitFor('renamed file applied', () => versions(app) === 2);
    writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.slice(0, 60)); // cut mid-document
    await waitFor('rejection', () => app.stores.rejections.latest() !== undefined);
    assert.is(versions(app), 2);
    assert.equal(clusterNames(app), ['api', 'web']);
  } finally {
    await app.close();
  }
});

test('deleting a file is a change of the whole tree (its resources go, references are checked)', async () => {
  const dir = writeTree({
    ...BASE,
    'extra.yaml': 'kind: Service\nname: extra\nendpoints: [{ address: 10.3.3.3:80 }]\n',
    'edge.yaml': BASE['edge.yaml']!.replace('  - to: web', '  - match: { prefix: /x }\n    to: extra\n  - to: web'),
  });
  const app = await startServer(dir, { watch: true });
  try {
    assert.equal(clusterNames(app), ['api', 'extra', 'web']);
    unlinkSync(join(dir, 'extra.yaml'));
    await waitFor('rejection of the dangling reference', () =>
      app.stores.rejections.latest()?.diagnostics.some((d) => d.code === 'FXDS_UNKNOWN_REFERENCE'),
    );
    writeFileSync(join(dir, 'edge.yaml'), BASE['edge.yaml']!);
    await waitFor('applied without extra', () => versions(app) === 2);
    assert.equal(clusterNames(app), ['api', 'web']);
  } finally {
    await app.close();
  }
});

test('a symlink swap of the directory itself is followed (releases + current)', async () => {
  const base = tempDir();
  mkdirSync(join(base, 'releases'));
  const r1 = writeTree(BASE, join(base, 'releases', 'r1'));
  symlinkSync('releases/r1', join(base, 'current'));
  const app = await startServer(join(base, 'current'), { watch: true });
  try {
    assert.equal(clusterNames(app), ['api', 'web']);
    writeTree(
      { ...BASE, 'edge.yaml': BASE['edge.yaml']!.replace('  - to: web\n', '  - to: api\n') },
      join(base, 'releases', 'r2'),
    );
    symlinkSync('releases/r2', join(base, 'current.tmp'));
    renameSync(join(base, 'current.tmp'), join(base, 'current'));
    await waitFor('swap followed', () => versions(app) === 2);
    assert.equal(clusterNames(app), ['api']);
    // Edits inside the new target are watched too; the old target no longer matters.
    rmSync(r1, { recursive: true });
    writeFileSync(
      join(base, 'releases', 'r2', 'more.yaml'),
      'kind: Service\nname: more\nendpoints: []\n---\nkind: VirtualHost\nname: more\ndomains: ' +
        '[more.example]\nroutes: [{ to: more }]\n---\nkind: Listener\nname: more\nport: 9999\nvirtualHosts: ' +
        '[more]\n',
    );
    await waitFor('edit in new target applied', () => versions(app) === 3);
    assert.equal(clusterNames(app), ['api', 'more']);
  } finally {
    await app.close();
  }
});

test('the config folder deleted and created again is still watched (no reconcile needed)', async () => {
  const parent = tempDir();
  const dir = join(parent, 'services');
  writeTree(BASE, dir);
  const app = await startServer(dir, { watch: true });
  try {
    const first = app.cache.current!.versionId;
    rmSync(dir, { recursive: true });
    await new Promise((r) => setTimeout(r, 400)); // the empty tree is refused meanwhile
    writeTree({ ...BASE, 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.9:80') }, dir);
    await waitFor('the recreated folder applied', () => app.cache.current!.versionId !== first, 5000);
    // ...and later edits in it too.
    const second = app.cache.current!.versionId;
    writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.8:80'));
    await waitFor('a later edit applied', () => app.cache.current!.versionId !== second, 5000);
  } finally {
    await app.close();
  }
});

test.run();
