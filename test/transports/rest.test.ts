/**
 * REST-JSON polling over real HTTP (docs/xds-protocol.md §3.5).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

const CDS = TypeUrls.cluster;
const EDS = TypeUrls.endpoint;
const NODE = {
  id: 'rest-1',
  cluster: 'c',
  user_agent_name: 'envoy',
  extensions: [{ name: 'envoy.filters.http.router', category: 'envoy.filters.http' }],
};
const HOLD_MS = 600;
/** A proxy that opted into long polling (as `fleetxds bootstrap --mode rest` writes it). */
const LONG_POLLER = { ...NODE, metadata: { fleetxds: { long_poll_ms: 60_000 } } };

let dir: string;
let app: RunningApp;

async function poll(
  type: string,
  body: unknown,
  init: RequestInit = {},
): Promise<{ status: number; json?: any; text: string; ms: number }> {
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:${type}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', host: 'fleetxds_rest' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, ms: Date.now() - started };
}

async function apply(files: Record<string, string>): Promise<void> {
  writeTree(files, dir);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
}

test.before.each(async () => {
  dir = writeTree(BASE);
  app = await startServer(dir, { rest: { holdMs: HOLD_MS, requestTimeoutMs: 5_000, bodyLimit: 64 * 1024 } });
});
test.after.each(async () => {
  await app.close();
});

test('first poll (no version_info) gets 200 with the full state; resources carry @type and parse with the real protos', async () => {
  const r = await poll('clusters', { node: NODE, type_url: CDS });
  assert.is(r.status, 200);
  assert.ok(r.json.version_info);
  assert.is(r.json.type_url, CDS);
  assert.equal(
    r.json.resources.map((x: any) => x.name),
    ['api', 'web'],
  );
  for (const res of r.json.resources) assert.is(res['@type'], CDS);
  assert.equal(encodeJson('envoy.service.discovery.v3.DiscoveryResponse', r.json).issues, []);
  // A REST proxy cannot use ADS: references point at its REST cluster, which a node that does not
  // name it in its metadata names by the Host it polls with.
  const eds = r.json.resources[0].eds_cluster_config.eds_config;
  assert.is(eds.api_config_source.api_type, 'REST');
  assert.equal(eds.api_config_source.cluster_names, [`127.0.0.1:${app.restPort}`]);
});

test('endpoints/routes polls get exactly the named resource', async () => {
  const r = await poll('endpoints', { node: NODE, resource_names: ['web'] });
  assert.is(r.status, 200);
  assert.equal(
    r.json.resources.map((x: any) => x.cluster_name),
    ['web'],
  );
  const routes = await poll('routes', { node: NODE, resource_names: ['edge'] });
  assert.equal(
    routes.json.resources.map((x: any) => x.name),
    ['edge'],
  );
  assert.is(routes.json.resources[0].virtual_hosts[0].name, 'site');
  const missing = await poll('routes', { node: NODE, resource_names: ['nope'] });
  assert.is(missing.status, 200);
  assert.equal(missing.json.resources, []);
});

test('an unchanged poll of a long-polling proxy is held, then answered 304 within the hold time', async () => {
  const first = await poll('clusters', { node: LONG_POLLER });
  const again = await poll('clusters', { node: LONG_POLLER, version_info: first.json.version_info });
  assert.is(again.status, 304);
  assert.is(again.text, '');
  assert.ok(again.ms >= HOLD_MS - 50, `held ${again.ms} ms`);
  assert.ok(again.ms < 5_000, 'answered before the client request_timeout');
});

test('a proxy that did not opt into long polling gets 304 at once (Envoy times polls out after 1 s by default)', async () => {
  const first = await poll('clusters', { node: NODE });
  const again = await poll('clusters', { node: NODE, version_info: first.json.version_info });
  assert.is(again.status, 304);
  assert.ok(again.ms < HOLD_MS / 2, `answered in ${again.ms} ms`);
  assert.is(app.rest!.heldCount(), 0);
  // ...and its config sources leave the request timeout at Envoy's default.
  const eds = first.json.resources[0].eds_cluster_config.eds_config.api_config_source;
  assert.is(eds.request_timeout, undefined);
  const lp = await poll('clusters', { node: LONG_POLLER });
  assert.is(lp.json.resources[0].eds_cluster_config.eds_config.api_config_source.request_timeout, '5s');
});

test('each EDS subscription has its own version: polls of two clusters infer no NACK, a reverted one does', async () => {
  const api = await poll('endpoints', { node: NODE, resource_names: ['api'] });
  const web = await poll('endpoints', { node: NODE, resource_names: ['web'] });
  assert.is.not(api.json.version_info, web.json.version_info);
  await poll('endpoints', { node: NODE, resource_names: ['api'], version_info: api.json.version_info });
  await poll('endpoints', { node: NODE, resource_names: ['web'], version_info: web.json.version_info });
  assert.equal(app.stores.nacks.list(), []);
  const status = app.registry.polling().find((s) => s.nodeId === NODE.id)!;
  assert.is(
    status.types[EDS]!.ackedVersion,
    app.cache.current!.groups.get('default')!.types.endpoint.version,
    'the type is ACKed once every subscription is',
  );
  // A change to web's endpoints, which the proxy then keeps reporting its old version for: rejected.
  await apply({ 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') });
  const unchanged = await poll('endpoints', {
    node: NODE,
    resource_names: ['api'],
    version_info: api.json.version_info,
  });
  assert.is(unchanged.status, 304, 'api did not change');
  const changed = await poll('endpoints', { node: NODE, resource_names: ['web'], version_info: web.json.version_info });
  assert.is(changed.status, 200);
  const again = await poll('endpoints', { node: NODE, resource_names: ['web'], version_info: web.json.version_info });
  assert.is(again.status, 304, 'the rejected version is not sent again');
  await poll('endpoints', { node: NODE, resource_names: ['web'], version_info: web.json.version_info });
  const nacks = app.stores.nacks.list();
  assert.is(nacks.length, 1, 'recorded once');
  assert.is(nacks[0]!.version, changed.json.version_info);
  assert.match(nacks[0]!.message, /inferred/);
});

test('a proxy that starts again (no version after having accepted one) is a new run: no NACK, earlier NACKs cleared from status', async () => {
  const first = await poll('clusters', { node: NODE });
  await poll('clusters', { node: NODE, version_info: first.json.version_info });
  // A rejected CDS version (the proxy keeps reporting the one before)...
  await apply({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 9s\n') });
  const second = await poll('clusters', { node: NODE, version_info: first.json.version_info });
  assert.is(second.status, 200);
  await poll('clusters', { node: NODE, version_info: first.json.version_info });
  assert.is(app.stores.nacks.list().length, 1);
  assert.ok(app.registry.polling()[0]!.types[CDS]!.lastNack);
  // ...then the proxy restarts.
  const again = await poll('clusters', { node: NODE });
  assert.is(again.status, 200);
  assert.is(app.stores.nacks.list().length, 1, 'no NACK for the restart');
  assert.is(
    app.registry.polling()[0]!.types[CDS]!.lastNack,
    undefined,
    "the earlier run's NACK is history, not status",
  );
});

test('a held poll whose proxy hangs up is let go at once (no timer left, the next change answers the others)', async () => {
  await app.close();
  app = await startServer(dir, { rest: { holdMs: 20_000, requestTimeoutMs: 30_000 } });
  const first = await poll('clusters', { node: LONG_POLLER });
  const version_info = first.json.version_info;
  const gone = new AbortController();
  const hungUp = poll('clusters', { node: LONG_POLLER, version_info }, { signal: gone.signal }).catch((e) => e);
  const kept = poll('clusters', { node: { ...LONG_POLLER, id: 'rest-2' }, version_info });
  await waitFor('both polls held', () => app.rest!.heldCount() === 2, 10_000, 10);
  gone.abort();
  assert.is(((await hungUp) as Error).name, 'AbortError');
  await waitFor('the poll whose client went away let go', () => app.rest!.heldCount() === 1, 10_000, 10);
  await apply({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 2s\n') });
  const r = await kept;
  assert.is(r.status, 200);
  assert.is.not(r.json.version_info, version_info);
  assert.is(app.rest!.heldCount(), 0);
});

test('a stale version is answered at once with 200', async () => {
  const r = await poll('clusters', { node: NODE, version_info: 'some-old-version' });
  assert.is(r.status, 200);
  assert.ok(r.ms < HOLD_MS);
});

test('a config change releases a held poll at once with the new version', async () => {
  await app.close();
  app = await startServer(dir, { rest: { holdMs: 20_000, requestTimeoutMs: 30_000 } });
  const first = await poll('endpoints', { node: LONG_POLLER, resource_names: ['api'] });
  const held = poll('endpoints', { node: LONG_POLLER, resource_names: ['api'], version_info: first.json.version_info });
  await waitFor('the poll held', () => app.rest!.heldCount() === 1, 10_000, 10);
  // A change to another cluster's endpoints does not wake this poll.
  await apply({ 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') });
  await new Promise((r) => setTimeout(r, 100));
  assert.is(app.rest!.heldCount(), 1);
  await apply({
    'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80').replace(
      '10.0.0.2:8080',
      '10.0.0.3:8080',
    ),
  });
  const r = await held;
  assert.is(r.status, 200);
  assert.ok(r.ms < 2_000, `released after ${r.ms} ms`);
  assert.is.not(r.json.version_info, first.json.version_info);
  const addrs = r.json.resources[0].endpoints[0].lb_endpoints.map(
    (e: any) => e.endpoint.address.socket_address.address,
  );
  assert.equal(addrs, ['10.0.0.1', '10.0.0.3']);
});

test('per node: last poll, applied version, and an inferred rejection when an older version keeps coming back', async () => {
  const v1 = await poll('clusters', { node: NODE });
  await apply({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 9s\n') });
  const v2 = await poll('clusters', { node: NODE, version_info: v1.json.version_info });
  assert.is(v2.status, 200);
  // The proxy rejected v2: its next poll still carries v1. v2 is not sent again (304: keep what you have).
  const v3 = await poll('clusters', { node: NODE, version_info: v1.json.version_info });
  assert.is(v3.status, 304);
  const s = app.registry.byNodeId('rest-1')[0];
  assert.is(s!.transport, 'rest');
  assert.ok(s!.lastSeenAt);
  const t = s!.types[CDS];
  assert.is(t!.sentVersion, v2.json.version_info);
  assert.is(t!.lastNack!.version, v2.json.version_info);
  assert.match(t!.lastNack!.message, /inferred/);
  const stored = app.stores.nacks.list('rest-1');
  assert.is(stored.length, 1, 'recorded once, not on every poll');
  assert.is(stored[0]!.transport, 'rest');
  // A proxy reporting v2 after all (another instance, or a retry that succeeded) is recorded as ACKed.
  await poll('clusters', { node: NODE, version_info: v2.json.version_info });
  assert.is(app.registry.byNodeId('rest-1')[0]!.types[CDS]!.ackedVersion, v2.json.version_info);
});

test('a body nested 5,000 levels deep gets 400, not 500', async () => {
  const deep = `${'{"a":'.repeat(5000)}{}${'}'.repeat(5000)}`;
  const r = await poll('clusters', `{"node":{"id":"rest-1","cluster":"c","metadata":${deep}}}`);
  assert.is(r.status, 400);
  assert.match(r.json.error, /nested deeper than 64 levels/);
});

test('bad requests get a 4xx with a clear message', async () => {
  const notJson = await poll('clusters', '{"node": ');
  assert.is(notJson.status, 400);
  assert.match(notJson.json.error, /JSON/i);
  const wrongType = await poll('endpoints', { node: NODE, resource_names: 'web' });
  assert.is(wrongType.status, 400);
  assert.match(wrongType.json.error, /resource_names: expected an array/);
  const unknownField = await poll('clusters', { node: NODE, version_infoo: 'x' });
  assert.is(unknownField.status, 400);
  assert.match(unknownField.json.error, /unknown field "version_infoo"/);
  const noNode = await poll('clusters', {});
  assert.is(noNode.status, 400);
  assert.match(noNode.json.error, /node\.id is required/);
  const mismatch = await poll('clusters', { node: NODE, type_url: EDS });
  assert.is(mismatch.status, 400);
  assert.match(mismatch.json.error, /does not match this path/);
  const unknownType = await poll('scoped-routes', { node: NODE });
  assert.is(unknownType.status, 404);
  assert.match(unknownType.json.error, /no REST discovery at \/v3\/discovery:scoped-routes/);
  const huge = await poll('clusters', { node: { ...NODE, metadata: { pad: 'x'.repeat(100_000) } } });
  assert.is(huge.status, 413);
  const arr = await poll('clusters', '[1,2]');
  assert.is(arr.status, 400);
  const get = await fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:clusters`);
  assert.is(get.status, 404);
  const text = await poll('clusters', 'x', { headers: { 'content-type': 'text/plain' } });
  assert.is(text.status, 415);
});

test('shutdown answers held polls (304) instead of dropping them', async () => {
  const first = await poll('clusters', { node: LONG_POLLER });
  await app.close();
  app = await startServer(dir, { rest: { holdMs: 20_000, requestTimeoutMs: 30_000 } });
  let answered = false;
  const held = poll('clusters', { node: LONG_POLLER, version_info: first.json.version_info }).finally(
    () => (answered = true),
  );
  await new Promise((r) => setTimeout(r, 300));
  assert.not.ok(answered, 'a long-polling proxy with nothing new is held');
  const t0 = Date.now();
  app.rest!.releaseAll();
  const r = await held;
  assert.is(r.status, 304);
  assert.ok(Date.now() - t0 < 2000, 'answered by the release, not by the hold time');
});

test.run();
