/**
 * The registration API as a VM and an attacker reach it (the REST listener, real sockets):
 *  - addresses that would point a service at the proxy itself, a metadata service or a whole
 *    network are refused (403) unless the policy names them;
 *  - an endpoint belongs to the token that registered it: another allowed token cannot re-weight,
 *    drain or remove it (403, audited);
 *  - refused calls without an allowed credential never reach the audit log: a flood of them leaves
 *    an operator's pin there, and they are counted in a metric instead;
 *  - one endpoint is one key however its address is spelt.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const digest = (t: string) => createHash('sha256').update(t).digest('hex');
let app: RunningApp;

test.before(async () => {
  app = await startServer(
    writeTree({
      ...BASE,
      'services.yaml': BASE['services.yaml']!.replace(
        'name: web\n',
        `name: web\nregistration: { tokens: ["${digest('vm-a')}", "${digest('vm-b')}"], ttl: 1h }\n`,
      ),
    }),
    { rest: {}, retention: { audit: { rows: 50 } } },
  );
});

test.after(() => app.close());

/** The service's registrations as the status API lists them: address and state. */
async function members(): Promise<{ address: string; state: string }[]> {
  const status = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as {
    registrations: { service: string; address: string; state: string }[];
  };
  return status.registrations.filter((r) => r.service === 'web').map(({ address, state }) => ({ address, state }));
}

async function call(method: string, address: string, token?: string, body?: object, suffix = '') {
  const r = await fetch(
    `http://127.0.0.1:${app.restPort}/v1/services/web/endpoints/${encodeURIComponent(address)}${suffix}`,
    {
      method,
      headers: {
        ...(token && { authorization: `Bearer ${token}` }),
        ...(body && { 'content-type': 'application/json' }),
      },
      body: body && JSON.stringify(body),
    },
  );
  return { status: r.status, body: (await r.json()) as { error?: string; address?: string; state?: string } };
}

test('reserved addresses are refused: loopback (an admin port), metadata, unspecified, broadcast, multicast', async () => {
  for (const address of [
    '127.0.0.1:9901',
    '[::1]:9901',
    '[::ffff:127.0.0.1]:9901',
    '0.0.0.0:80',
    '[::]:80',
    '169.254.169.254:80',
    '255.255.255.255:80',
    '224.0.0.1:80',
    '[fe80::1]:80',
  ]) {
    const r = await call('PUT', address, 'vm-a');
    assert.is(r.status, 403, address);
    assert.match(r.body.error!, /is an? .*address/, address);
  }
  assert.equal(await members(), []);
});

test('another allowed identity cannot re-weight, drain or remove an endpoint it did not register', async () => {
  assert.is((await call('PUT', '10.0.7.1:80', 'vm-a')).status, 200);
  const before = app.stores.audit.list(100).length;
  for (const [method, body, suffix] of [
    ['PUT', { weight: 1_000_000, health: 'unhealthy' }, ''],
    ['POST', undefined, '/drain'],
    ['DELETE', undefined, ''],
  ] as const) {
    const r = await call(method, '10.0.7.1:80', 'vm-b', body, suffix);
    assert.is(r.status, 403, `${method} ${suffix}`);
    assert.match(r.body.error!, /registered by another identity/);
  }
  assert.equal(await members(), [{ address: '10.0.7.1:80', state: 'healthy' }]);
  const refused = app.stores.audit.list(100).slice(0, app.stores.audit.list(100).length - before);
  assert.equal(refused.map((r) => r.action).sort(), ['deregister-refused', 'drain-refused', 'register-refused']);
  assert.ok(refused.every((r) => r.actor === `token:${digest('vm-b').slice(0, 12)}`));
  assert.is((await call('POST', '10.0.7.1:80', 'vm-a', undefined, '/drain')).status, 200);
});

test('a flood of unauthenticated calls never evicts an operator decision from the audit log', async () => {
  const pin = await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/pins/default`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ versionId: app.cache.current!.versionId }),
  });
  assert.is(pin.status, 200);
  const metric = async () => {
    const text = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
    const m = /fleetxds_registration_refusals_total\{action="register",reason="unauthenticated"\} (\d+)/.exec(text);
    return Number(m?.[1] ?? 0);
  };
  const counted = await metric();
  for (let i = 0; i < 10; i++)
    await Promise.all(
      Array.from({ length: 15 }, (_, j) => call('PUT', `10.1.${i}.${j + 1}:80`, j % 2 ? 'not-a-token' : undefined)),
    );
  assert.ok(
    app.stores.audit.list(1000).some((r) => r.action === 'pin'),
    'the pin is still in the audit log (retention: 50 rows)',
  );
  assert.ok(!app.stores.audit.list(1000).some((r) => r.actor === 'anonymous' || r.actor === 'token'));
  assert.is(await metric(), counted + 150);
});

test('one endpoint, one key: spellings of one address register one endpoint', async () => {
  for (const address of ['10.0.4.21:8080', '10.0.4.21:08080', '[::ffff:10.0.4.21]:8080']) {
    const r = await call('PUT', address, 'vm-a');
    assert.is(r.status, 200, address);
    assert.is(r.body.address, '10.0.4.21:8080');
  }
  assert.is((await members()).filter((e) => e.address.startsWith('10.0.4.21')).length, 1);
});

test('any JSON body a registration sends gets 200 or a 4xx with a reason, never a 500', async () => {
  await fc.assert(
    fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), async (json) => {
      const r = await fetch(`http://127.0.0.1:${app.restPort}/v1/services/web/endpoints/10.0.9.9:80`, {
        method: 'PUT',
        headers: { authorization: 'Bearer vm-a', 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
      const body = (await r.json()) as { error?: string };
      assert.ok(
        r.status === 200 || (r.status >= 400 && r.status < 500 && body.error),
        `${r.status} for ${JSON.stringify(json)}`,
      );
    }),
    { seed: Number(process.env.FLEETXDS_PROPERTY_SEED ?? 20261127), numRuns: 150 },
  );
});

test.run();
