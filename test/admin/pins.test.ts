/**
 * Operator decisions over the admin API: pins name node groups that exist; anything else (a typo, a
 * path, a body of the wrong shape) is refused with its status and code, and not audited.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, T } from '../helpers/ads-client.ts';
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

test('hostile decision bodies get 400 with a code, never a 500, and nothing is decided', async () => {
  const app = await startServer(writeTree(BASE));
  try {
    const v = app.cache.current!.versionId;
    const send = (method: string, path: string, body: string) =>
      fetch(`http://127.0.0.1:${app.adminPort}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body,
      });
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const cases: [string, string, string, RegExp][] = [
      ['POST', '/api/v1/rollback', `{"versionId": ${deep(30_000)}}`, /nested deeper than 8 levels/],
      ['POST', '/api/v1/rollback', `{"versionId": ${v}, "actor": ${deep(30_000)}}`, /nested deeper/],
      ['PUT', '/api/v1/pins/default', `{"versionId": ${deep(30_000)}}`, /nested deeper/],
      ['POST', '/api/v1/rollout/halt', `{"actor": ${deep(30_000)}}`, /nested deeper/],
      ['POST', '/api/v1/rollback', `{"versionId": [${v}]}`, /versionId must be a whole number/],
      ['POST', '/api/v1/rollback', `{"versionId": {"valueOf": ${v}}}`, /versionId must be a whole number/],
      ['POST', '/api/v1/rollback', `{"versionId": ${v}, "actor": ["x"]}`, /actor must be a string/],
      ['POST', '/api/v1/rollback', `{"versionId": ${v}, "actor": "${'a'.repeat(201)}"}`, /at most 200/],
      ['PUT', '/api/v1/pins/default', `[${v}]`, /must be a JSON object/],
      ['POST', '/api/v1/rollback', '{}', /body must be \{"versionId": <id>\}/],
    ];
    for (const [method, path, body, error] of cases) {
      const r = await send(method, path, body);
      const text = await r.text();
      assert.is(r.status, 400, `${method} ${path} ${body.slice(0, 40)}: ${text.slice(0, 200)}`);
      const json = JSON.parse(text) as { error: string; code: string };
      assert.match(json.error, error);
      assert.is(json.code, 'FXDS_BAD_REQUEST');
    }
    assert.equal(app.stores.pins.list(), []);
    assert.equal(app.stores.audit.list(), [], 'nothing audited');
    const ok = await send('POST', '/api/v1/rollback', JSON.stringify({ versionId: String(v), actor: 'ops' }));
    assert.is(ok.status, 200, 'a version id as a string of digits is still accepted');
  } finally {
    await app.close();
  }
});

test("a pinned group's proxies are told the pinned version in control_plane.identifier", async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  const client = connect(app.grpcPort);
  try {
    const v1 = app.cache.current!.versionId;
    writeTree(
      { ...BASE, 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 3s\n') },
      dir,
    );
    const v2 = ((await app.reload()) as { versionId: number }).versionId;
    assert.ok(v2 > v1);
    const put = await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/pins/default`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ versionId: v1 }),
    });
    assert.is(put.status, 200);
    const s = client.open();
    s.send({ node: { id: 'pinned-proxy', cluster: 'c' }, type_url: T.cluster });
    const cds = await s.next();
    assert.is(cds.control_plane.identifier, `fleetxds version ${v1}`);
  } finally {
    client.close();
    await app.close();
  }
});

test.run();
