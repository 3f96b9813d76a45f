/** Pins name node groups that exist; anything else (a typo, a path) is refused and not audited. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('PUT /api/v1/pins/:group refuses unknown groups (404) and pins known ones', async () => {
  const app = await startServer(writeTree(BASE));
  try {
    const v = app.cache.current!.versionId;
    const put = (group: string) =>
      fetch(`http://127.0.0.1:${app.adminPort}/api/v1/pins/${group}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ versionId: v }),
      });
    for (const group of ['no-such-group', '..%2F..%2Fetc']) {
      const r = await put(group);
      assert.is(r.status, 404, group);
      assert.match(((await r.json()) as { error: string }).error, /no node group .* \(known: default\)/);
    }
    assert.equal(app.stores.pins.list(), []);
    assert.equal(app.stores.audit.list(), [], 'nothing audited');
    const ok = await put('default');
    assert.is(ok.status, 200);
    assert.is(app.stores.pins.list().length, 1);
  } finally {
    await app.close();
  }
});

test.run();
