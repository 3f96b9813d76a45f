import { join } from 'node:path';
import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, names, T } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';
import pino from 'pino';
import { ConfigPipeline } from '../../src/app/pipeline.ts';
import { SnapshotCache } from '../../src/snapshot/snapshot-cache.ts';
import { openStores } from '../../src/store/database.ts';

test('on restart the last good version is served from SQLite, even when the directory is now broken', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(BASE);
  const first = await startServer(dir, { database: db });
  const v1 = first.cache.current!;
  await first.close();

  writeFileSync(join(dir, 'services.yaml'), 'kind: Service\nname: [broken\n');
  const second = await startServer(dir, { database: db });
  try {
    assert.ok(second.cache.current, 'serving');
    assert.is(second.cache.current.versionId, v1.versionId);
    assert.is(second.cache.current.modelHash, v1.modelHash);
    assert.ok(second.stores.rejections.latest(), 'the broken tree was recorded as rejected');
    const c = connect(second.grpcPort);
    const s = c.open();
    s.send({ node: { id: 'n', cluster: 'x' }, type_url: T.cluster });
    assert.equal(names(await s.next()), ['api', 'web']);
    s.close();
    c.close();
  } finally {
    await second.close();
  }
});

test('a restart serves the stored bytes: nothing is translated or encoded, nothing is parsed', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree(BASE);
  const first = await startServer(dir, { database: db });
  const before = first.cache.current!;
  const anyBefore = before.groups.get('default')!.types.cluster.resources.get('api')!.any;
  await first.close();
  const second = await startServer(dir, { database: db });
  try {
    assert.is(second.pipeline.caches.encoder.stats.encoded, 0, 'no resource encoded on restart');
    const cur = second.cache.current!;
    assert.is(cur.versionId, before.versionId);
    for (const [group, g] of before.groups) {
      for (const [kind, t] of Object.entries(g.types))
        assert.is(cur.groups.get(group)!.types[kind as 'cluster'].version, t.version, `${group}/${kind}`);
    }
    assert.ok(Buffer.compare(cur.groups.get('default')!.types.cluster.resources.get('api')!.any, anyBefore) === 0);
    assert.is(second.stores.revisions.list().length, 1, 'the unchanged directory made no new version');
  } finally {
    await second.close();
  }
});

test('parses outlive the process: after a restart, a push parses only the file it changed', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree({
    ...BASE,
    'more.yaml': 'kind: Service\nname: extra\nendpoints: [{ address: 10.0.2.1:80 }]\n',
  });
  const first = await startServer(dir, { database: db });
  assert.equal(first.pipeline.caches.source.stats, { parsed: 3, fromStore: 0 });
  await first.close();
  writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.replace('10.0.0.1:8080', '10.0.0.9:8080'));
  const second = await startServer(dir, { database: db });
  try {
    assert.equal(second.pipeline.caches.source.stats, { parsed: 1, fromStore: 2 });
    const cla = second.cache.current!.groups.get('default')!.types.endpoint.resources.get('api')!.json;
    assert.match(JSON.stringify(cla), '10.0.0.9', 'the changed file is what is served');
    assert.is(second.stores.revisions.list().length, 2);
  } finally {
    await second.close();
  }
});

test('a route configuration is stored by virtual host: an edit stores the host it changed; a restart serves the same', async () => {
  const db = join(tempDir(), 'state.db');
  const other = (prefix: string) =>
    `---\nkind: VirtualHost\nname: other\ndomains: [other.example.com]\nroutes:\n  - match: { prefix: ${prefix} }\n    to: web\n`;
  const edge = (prefix: string) => BASE['edge.yaml']!.replace('[site]', '[site, other]') + other(prefix);
  const dir = writeTree({ ...BASE, 'edge.yaml': edge('/a') });
  const partRows = () => {
    const d = new Database(db, { readonly: true });
    try {
      return d.prepare('SELECT COUNT(*) FROM resource_parts').pluck().get();
    } finally {
      d.close();
    }
  };
  const first = await startServer(dir, { database: db });
  assert.is(partRows(), 2, 'one part per virtual host');
  writeFileSync(join(dir, 'edge.yaml'), edge('/b'));
  assert.is(((await first.reload()) as { status: string }).status, 'applied');
  assert.is(partRows(), 3, 'the edit stored the one virtual host it changed');
  const before = first.cache.current!.groups.get('default')!.types.route.resources.get('edge')!;
  const json = JSON.parse(JSON.stringify(before.json));
  await first.close();
  const second = await startServer(dir, { database: db });
  try {
    assert.is(second.pipeline.caches.encoder.stats.encoded, 0, 'nothing encoded on restart');
    const after = second.cache.current!.groups.get('default')!.types.route.resources.get('edge')!;
    assert.is(after.key, before.key);
    assert.ok(Buffer.compare(after.any, before.any) === 0, 'the same bytes, rebuilt from the parts');
    assert.equal(after.json, json, 'the same JSON, virtual hosts in place');
    // Parts come back into the encoder: the next edit encodes the virtual host it changes, not every one.
    writeFileSync(join(dir, 'edge.yaml'), edge('/c'));
    assert.is(((await second.reload()) as { status: string }).status, 'applied');
    assert.is(second.pipeline.caches.encoder.stats.partsEncoded, 1);
  } finally {
    await second.close();
  }
});

test('same model, same versions: a second server on a fresh database serves identical versions', async () => {
  const dir = writeTree(BASE);
  const a = await startServer(dir);
  const b = await startServer(dir);
  try {
    for (const [group, g] of a.cache.current!.groups) {
      for (const [kind, t] of Object.entries(g.types))
        assert.is(b.cache.current!.groups.get(group)!.types[kind as 'cluster'].version, t.version);
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('an unchanged tree does not create a new version', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  try {
    const out = (await app.reload()) as { status: string };
    assert.is(out.status, 'unchanged');
    assert.is(app.stores.revisions.list().length, 1);
  } finally {
    await app.close();
  }
});

test('a restart serves before it reads the model: node groups come from the stored head; older rows read the model', async () => {
  const db = join(tempDir(), 'state.db');
  const dir = writeTree({
    ...BASE,
    'groups.yaml': 'kind: NodeGroup\nname: other\nmatch: { cluster: other }\n',
  });
  const first = await startServer(dir, { database: db });
  const id = first.cache.current!.versionId;
  await first.close();
  // Without its chunks the model cannot be read: a restore that served anyway did not read it.
  const raw = new Database(db);
  const chunks = raw.prepare('SELECT hash, json FROM model_chunks').all() as { hash: string; json: string }[];
  raw.prepare('DELETE FROM model_chunks').run();
  raw.close();
  const log = pino({ level: 'silent' });
  const restore = async () => {
    const stores = openStores(db);
    const cache = new SnapshotCache();
    const pipeline = new ConfigPipeline(stores, cache, log, dir);
    return { stores, cache, served: await pipeline.loadLatestFromStore() };
  };
  const a = await restore();
  try {
    assert.ok(a.served, 'served without the model');
    assert.is(a.cache.current!.versionId, id);
    const { resolver } = a.cache.current!;
    assert.is(resolver.resolve({ id: 'n', cluster: 'other', metadata: {} }), 'other', 'groups from the head');
    assert.is(resolver.resolve({ id: 'n', cluster: 'x', metadata: {} }), 'default');
    assert.throws(() => a.stores.revisions.get(id)!.model, /chunk .* is missing/, 'the chunks are really gone');
  } finally {
    a.stores.close();
  }
  // A row stored before heads existed restores from its model.
  const again = new Database(db);
  const put = again.prepare('INSERT INTO model_chunks (hash, json) VALUES (?, ?)');
  for (const c of chunks) put.run(c.hash, c.json);
  again.prepare('UPDATE config_versions SET head_json = NULL').run();
  again.close();
  const b = await restore();
  try {
    assert.ok(b.served);
    assert.is(b.cache.current!.resolver.resolve({ id: 'n', cluster: 'other', metadata: {} }), 'other');
    assert.equal(
      b.stores.revisions.get(id)!.head.nodeGroups.map((g) => g.name),
      ['other'],
      'an older row has the model as its head',
    );
  } finally {
    b.stores.close();
  }
});

test.run();
