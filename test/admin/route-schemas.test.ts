/**
 * Every admin route checks the parts of a request it reads against a schema, and a request that
 * fails one is refused with the message and code of the catalogue (never a 500, never fastify's
 * own wording).
 */
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createAdminServer } from '../../src/admin/server.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('every route with path parameters, a query or a body declares their schemas', async () => {
  const app = await startServer(writeTree(BASE));
  try {
    const routes: { method: string; url: string; schema?: { params?: unknown; body?: unknown } }[] = [];
    const admin = createAdminServer({
      control: {} as never,
      cache: app.cache,
      registry: app.registry,
      log: pino({ level: 'silent' }),
    });
    admin.addHook('onRoute', (r) => void routes.push({ method: String(r.method), url: r.url, schema: r.schema }));
    await admin.ready();
    assert.ok(routes.length >= 30, `${routes.length} routes seen`);
    for (const r of routes) {
      if (r.method === 'HEAD') continue;
      if (r.url.includes(':')) assert.ok(r.schema?.params, `${r.method} ${r.url} has a params schema`);
      if (r.method === 'POST' || r.method === 'PUT')
        assert.ok(r.schema?.body, `${r.method} ${r.url} has a body schema`);
    }
    await admin.close();
  } finally {
    await app.close();
  }
});

test('requests that fail a schema get the catalogue code and message', async () => {
  const app = await startServer(writeTree(BASE));
  try {
    const cases: [method: string, path: string, status: number, code: string, message: RegExp][] = [
      ['POST', '/api/v1/rollout/explode', 404, 'FXDS_NOT_FOUND', /command must be promote, halt, resume or abort/],
      ['GET', '/api/v1/groups/default/resources/bogus', 404, 'FXDS_NOT_FOUND', /kind must be one of (\w+, )+\w+$/],
      ['GET', '/api/v1/versions/abc/diff/1', 404, 'FXDS_UNKNOWN_VERSION', /unknown version/],
      [
        'GET',
        '/api/v1/versions/1/diff/2/resources/default/secret/x',
        400,
        'FXDS_BAD_REQUEST',
        /secrets are never shown/,
      ],
      ['GET', '/api/v1/fleet/nodes?state=stuck', 400, 'FXDS_BAD_REQUEST', /state must be one of/],
      ['GET', '/api/v1/fleet/nodes?state=behind&state=nacked', 400, 'FXDS_BAD_REQUEST', /state must be one of/],
      [
        'GET',
        `/api/v1/fleet/nodes?group=${'g'.repeat(2000)}`,
        400,
        'FXDS_BAD_REQUEST',
        /querystring\/group must NOT have more/,
      ],
      ['GET', '/api/v1/nodes/n1/explain?type=everything', 400, 'FXDS_BAD_REQUEST', /type must be one of/],
      ['GET', '/api/v1/versions?limit=123456789012345678901', 400, 'FXDS_BAD_REQUEST', /querystring\/limit/],
    ];
    for (const [method, path, status, code, message] of cases) {
      const r = await fetch(`http://127.0.0.1:${app.adminPort}${path}`, { method });
      const text = await r.text();
      assert.is(r.status, status, `${method} ${path.slice(0, 60)}: ${text.slice(0, 200)}`);
      const json = JSON.parse(text) as { error: string; code: string };
      assert.is(json.code, code, path.slice(0, 60));
      assert.match(json.error, message);
    }
    // A body's unknown fields are dropped before the route reads it; the decision is made.
    const v = app.cache.current!.versionId;
    const r = await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/pins/default`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ versionId: v, actor: 'ops', extra: { deep: 1 } }),
    });
    assert.is(r.status, 200, await r.text());
    assert.is(app.stores.audit.list()[0]?.actor, 'ops');
  } finally {
    await app.close();
  }
});

test.run();
