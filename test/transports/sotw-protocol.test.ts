/**
 * State-of-the-world rules (docs/xds-protocol.md §4.8), each checked with a scripted client over
 * a real gRPC socket against the real server.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, names, T, type Json } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, policyEdgeTree, writeTree } from '../helpers/tree.ts';

const NODE = { id: 'envoy-1', cluster: 'edge' };
let dir: string;
let app: RunningApp;
let client: ReturnType<typeof connect>;

async function setTree(files: Record<string, string>): Promise<void> {
  writeTree(files, dir);
  const out = await app.reload();
  assert.is((out as { status: string }).status, 'applied');
}

function ack(res: Json, extra: Json = {}): Json {
  return { type_url: res.type_url, version_info: res.version_info, response_nonce: res.nonce, ...extra };
}

test.before.each(async () => {
  dir = writeTree(BASE);
  app = await startServer(dir);
  client = connect(app.grpcPort);
});

test.after.each(async () => {
  client.close();
  await app.close();
});

test('a new stream gets the full state of LDS and CDS (legacy wildcard), with per-type versions and nonces', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const cds = await s.next();
  assert.is(cds.type_url, T.cluster);
  assert.ok(cds.nonce);
  assert.ok(cds.version_info);
  assert.equal(names(cds), ['api', 'web']);
  for (const r of cds.resources) assert.is(r['@type'], T.cluster);
  s.send({ type_url: T.listener });
  const lds = await s.next();
  assert.equal(names(lds), ['edge']);
  assert.is.not(lds.nonce, cds.nonce, 'nonces are unique on a stream');
  assert.is.not(lds.version_info, cds.version_info);
  s.close();
});

test('an ACK gets no response; an unchanged config is not resent', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const cds = await s.next();
  s.send(ack(cds));
  assert.ok(await s.quiet(400), 'no response to an ACK');
  await app.reload(); // same tree: nothing to push
  assert.ok(await s.quiet(300));
  s.close();
});

test('a NACK is recorded with its error text and the same version is not pushed again', async () => {
  const s = client.open();
  s.send({ node: { ...NODE, id: 'nacker' }, type_url: T.cluster });
  const cds = await s.next();
  s.send({
    type_url: T.cluster,
    version_info: '',
    response_nonce: cds.nonce,
    error_detail: { code: 13, message: 'cluster api: rejected by test' },
  });
  assert.ok(await s.quiet(400), 'a NACK must not trigger a resend of the same content');
  const status = app.registry.byNodeId('nacker')[0]!.types[T.cluster];
  assert.is(status!.lastNack!.message, 'cluster api: rejected by test');
  assert.is(status!.lastNack!.version, cds.version_info);
  assert.is(status!.ackedVersion, undefined);
  const stored = app.stores.nacks.list('nacker');
  assert.is(stored.length, 1);
  assert.is(stored[0]!.message, 'cluster api: rejected by test');
  assert.is(stored[0]!.typeUrl, T.cluster);
  // The last good version keeps being served; a new config version is pushed.
  await setTree({
    'services.yaml': BASE['services.yaml']!.replace('10.0.0.2:8080', '10.0.0.3:8080').replace(
      'protocol: http2',
      'protocol: http1',
    ),
  });
  const next = await s.next();
  assert.is(next.type_url, T.cluster);
  assert.is.not(next.version_info, cds.version_info);
  s.close();
});

test('a request with a stale nonce is ignored', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names: ['api'] });
  const first = await s.next();
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('10.0.0.2:8080', '10.0.0.3:8080') });
  const second = await s.next();
  assert.is.not(second.nonce, first.nonce);
  // A request carrying the older nonce (and a new name) is stale: nothing is sent for it.
  s.send({
    type_url: T.endpoint,
    version_info: first.version_info,
    response_nonce: first.nonce,
    resource_names: ['api', 'web'],
  });
  assert.ok(await s.quiet(400), 'stale request answered');
  // The same change with the current nonce is honoured.
  s.send({
    type_url: T.endpoint,
    version_info: second.version_info,
    response_nonce: second.nonce,
    resource_names: ['api', 'web'],
  });
  const third = await s.next();
  assert.equal(names(third), ['web'], 'the newly subscribed name (api is unchanged: EDS is not full-state)');
  s.close();
});

test('a requested resource that does not exist yet is sent when it appears', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names: ['later'] });
  assert.ok(await s.quiet(300), 'nothing to send for a missing name');
  await setTree({
    'later.yaml': 'kind: Service\nname: later\nendpoints: [{ address: 10.9.9.9:80 }]\n',
    'edge.yaml': BASE['edge.yaml']!.replace('  - to: web', '  - match: { prefix: /later }\n    to: later\n  - to: web'),
  });
  const res = await s.next();
  assert.is(res.type_url, T.endpoint);
  assert.equal(names(res), ['later']);
  assert.is(res.resources[0].endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address, '10.9.9.9');
  s.close();
});

test('a name added to the subscription is sent even if it was sent before and is unchanged', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names: ['api', 'web'] });
  const r1 = await s.next();
  assert.equal(names(r1), ['api', 'web']);
  s.send(ack(r1, { resource_names: ['api'] }));
  assert.ok(await s.quiet(300), 'dropping a name needs no response');
  s.send(ack(r1, { resource_names: ['api', 'web'] }));
  const r2 = await s.next();
  assert.equal(names(r2), ['web'], 'resubscribed name resent');
  s.send(ack(r2, { resource_names: ['api', 'web'] }));
  assert.ok(await s.quiet(300));
  s.close();
});

test('EDS over SotW carries only what changed ("delta over SotW"), LDS/CDS always the full set', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names: ['api', 'web'] });
  const r1 = await s.next();
  s.send(ack(r1, { resource_names: ['api', 'web'] }));
  s.send({ type_url: T.cluster });
  const c1 = await s.next();
  s.send(ack(c1));
  await setTree({
    'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80').replace(
      'name: web\n',
      'name: web\nconnectTimeout: 3s\n',
    ),
  });
  const c2 = await s.next();
  assert.is(c2.type_url, T.cluster);
  assert.equal(names(c2), ['api', 'web'], 'CDS is full state');
  const e2 = await s.next();
  assert.equal(names(e2), ['web'], 'EDS: only the changed assignment');
  s.close();
});

test('EDS over SotW: every assignment a change brings goes in one push, changed and new alike, in name order', async () => {
  const s = client.open();
  const subscribed = ['api', 'web', 'aardvark']; // aardvark does not exist yet
  s.send({ node: NODE, type_url: T.endpoint, resource_names: subscribed });
  const r1 = await s.next();
  assert.equal(names(r1), ['api', 'web']);
  s.send(ack(r1, { resource_names: subscribed }));
  await setTree({
    'services.yaml':
      BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80').replace('10.0.0.2:8080', '10.0.0.3:8080') +
      '---\nkind: Service\nname: aardvark\nendpoints: [{ address: 10.0.2.1:80 }]\n',
    // A group is served the clusters its routes use: route to the new one.
    'edge.yaml': BASE['edge.yaml']!.replace('  - to: web', '  - match: { prefix: /a }\n    to: aardvark\n  - to: web'),
  });
  const e2 = await s.next();
  assert.equal(names(e2), ['aardvark', 'api', 'web'], 'two changed and one new, sorted across them');
  s.send(ack(e2, { resource_names: subscribed }));
  assert.ok(await s.quiet(300), 'nothing more: each went once');
  s.close();
});

test('wildcard rules: explicit "*", then names only, then an empty list means nothing', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster, resource_names: ['*'] });
  const r1 = await s.next();
  assert.equal(names(r1), ['api', 'web']);
  s.send(ack(r1, { resource_names: ['web'] }));
  const r2 = await s.next();
  assert.equal(names(r2), ['web'], 'wildcard dropped, explicit name kept');
  s.send(ack(r2, { resource_names: [] }));
  assert.ok(await s.quiet(300), 'empty list after names: unsubscribed');
  await setTree({
    'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80').replace(
      'name: web\n',
      'name: web\nconnectTimeout: 3s\n',
    ),
  });
  assert.ok(await s.quiet(300), 'nothing pushed to an unsubscribed type');
  s.close();
});

test('the legacy wildcard is not applied to EDS/RDS', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names: [] });
  s.send({ type_url: T.route, resource_names: [] });
  assert.ok(await s.quiet(400));
  s.close();
});

test('a changed cluster gets its (unchanged) endpoints again, after CDS, so it does not stay warming', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const cds = await s.next();
  s.send(ack(cds));
  s.send({ type_url: T.endpoint, resource_names: ['api', 'web'] });
  const eds = await s.next();
  s.send(ack(eds, { resource_names: ['api', 'web'] }));
  assert.ok(await s.quiet(200));
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('name: api\n', 'name: api\nconnectTimeout: 7s\n') });
  const cds2 = await s.next();
  assert.is(cds2.type_url, T.cluster, 'CDS first');
  const eds2 = await s.next();
  assert.is(eds2.type_url, T.endpoint, 'then EDS');
  assert.is(eds2.version_info, eds.version_info, 'endpoint content unchanged');
  assert.ok(names(eds2).includes('api'));
  s.close();
});

test('pushes are ordered CDS, EDS, LDS, RDS', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.route, resource_names: ['edge'] });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.endpoint, resource_names: ['api', 'web', 'new'] });
  s.send({ type_url: T.cluster });
  const initial: Json[] = [];
  for (let i = 0; i < 4; i++) initial.push(await s.next());
  for (const r of initial)
    s.send(
      ack(
        r,
        r.type_url === T.endpoint
          ? { resource_names: ['api', 'web', 'new'] }
          : r.type_url === T.route
            ? { resource_names: ['edge'] }
            : {},
      ),
    );
  assert.ok(await s.quiet(200));
  await setTree({
    'new.yaml': 'kind: Service\nname: new\nendpoints: [{ address: 10.7.7.7:80 }]\n',
    'edge.yaml': BASE['edge.yaml']!.replace(
      '  - to: web',
      '  - match: { prefix: /new }\n    to: new\n  - to: web',
    ).replace('port: 8080', 'port: 8081'),
  });
  const order = [
    (await s.next()).type_url,
    (await s.next()).type_url,
    (await s.next()).type_url,
    (await s.next()).type_url,
  ];
  assert.equal(order, [T.cluster, T.endpoint, T.listener, T.route]);
  s.close();
});

test('a token-policy edit is an extension config alone; with a route change, the config goes first', async () => {
  await setTree(policyEdgeTree('k1'));
  const s = client.open();
  const JWT = 'edge/envoy.filters.http.jwt_authn';
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.route, resource_names: ['edge'] });
  s.send({ type_url: T.extension, resource_names: [JWT] });
  const got: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await s.next();
    got.push(r.type_url);
    s.send(
      ack(
        r,
        r.type_url === T.route
          ? { resource_names: ['edge'] }
          : r.type_url === T.extension
            ? { resource_names: [JWT] }
            : {},
      ),
    );
  }
  assert.equal(got.sort(), [T.cluster, T.extension, T.listener, T.route].sort());
  assert.ok(await s.quiet(200));
  // New keys: the listener and its routes stay as they are.
  await setTree(policyEdgeTree('k2'));
  const ecds = await s.next();
  assert.equal([ecds.type_url, names(ecds)], [T.extension, [JWT]]);
  s.send(ack(ecds, { resource_names: [JWT] }));
  assert.ok(await s.quiet(300), 'nothing but the extension config');
  // A route naming a requirement the config adds: the config first (SOTW-14).
  await setTree(policyEdgeTree('k2', true));
  const first = await s.next();
  const second = await s.next();
  assert.equal([first.type_url, second.type_url], [T.extension, T.route]);
  s.close();
});

test('a removed cluster is dropped only after listeners and routes stopped using it', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.endpoint, resource_names: ['api', 'web', 'fresh'] });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.route, resource_names: ['edge'] });
  for (let i = 0; i < 4; i++) {
    const r = await s.next();
    s.send(
      ack(
        r,
        r.type_url === T.endpoint
          ? { resource_names: ['api', 'web', 'fresh'] }
          : r.type_url === T.route
            ? { resource_names: ['edge'] }
            : {},
      ),
    );
  }
  await s.quiet(200);
  await setTree({
    'fresh.yaml': 'kind: Service\nname: fresh\nendpoints: [{ address: 10.5.5.5:80 }]\n',
    'edge.yaml': BASE['edge.yaml']!.replace('  - to: web\n', '  - to: fresh\n'),
  });
  const seq: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await s.next();
    seq.push(`${r.type_url.split('.').pop()}:${names(r).join(',')}`);
  }
  assert.equal(seq, [
    'Cluster:api,fresh,web',
    'ClusterLoadAssignment:fresh',
    'RouteConfiguration:edge',
    'Cluster:api,fresh',
  ]);
  s.close();
});

/** A stream holding api and web (clusters, their endpoints, listener edge, routes edge), everything ACKed. */
async function settledStream(): Promise<{ s: ReturnType<typeof client.open>; eds: Json }> {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.endpoint, resource_names: ['api', 'web'] });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.route, resource_names: ['edge'] });
  let eds: Json = {};
  for (let i = 0; i < 4; i++) {
    const r = await s.next();
    if (r.type_url === T.endpoint) eds = r;
    const names = { [T.endpoint]: { resource_names: ['api', 'web'] }, [T.route]: { resource_names: ['edge'] } };
    s.send(ack(r, names[r.type_url] ?? {}));
  }
  assert.ok(await s.quiet(200));
  return { s, eds };
}

const MOVE_TO_FRESH = {
  'fresh.yaml': 'kind: Service\nname: fresh\nendpoints: [{ address: 10.5.5.5:80 }]\n',
  'edge.yaml': BASE['edge.yaml']!.replace('  - to: web\n', '  - to: fresh\n'),
};
const label = (r: Json) => `${r.type_url.split('.').pop()}:${names(r).join(',')}`;

test('routes to a cluster added by the same change wait until the client asked for its endpoints and got them', async () => {
  const { s, eds } = await settledStream();
  await setTree(MOVE_TO_FRESH);
  const cds = await s.next();
  assert.is(label(cds), 'Cluster:api,fresh,web', 'the new cluster, the old one kept');
  assert.ok(await s.quiet(400), 'no route to `fresh` before its endpoints');
  s.send(ack(cds));
  assert.ok(await s.quiet(200), 'the ACK of the clusters does not end the wait');
  // What Envoy does once it applied the clusters: ask for the new cluster's endpoints.
  s.send({ ...ack(eds), resource_names: ['api', 'fresh', 'web'] });
  const seq = [label(await s.next()), label(await s.next()), label(await s.next())];
  assert.equal(seq, ['ClusterLoadAssignment:fresh', 'RouteConfiguration:edge', 'Cluster:api,fresh']);
  assert.ok(await s.quiet(200), 'each held response was sent once');
  s.close();
});

test('a client that never asks for the endpoints gets its routes after the hold limit', async () => {
  client.close();
  await app.close();
  app = await startServer(dir, { grpc: { warmingHoldMs: 400 } });
  client = connect(app.grpcPort);
  const { s } = await settledStream();
  await setTree(MOVE_TO_FRESH);
  await s.next();
  const held = Date.now();
  assert.ok(await s.quiet(250));
  const rds = await s.next();
  assert.is(label(rds), 'RouteConfiguration:edge');
  assert.ok(Date.now() - held >= 350, `routes sent ${Date.now() - held} ms after the clusters`);
  assert.is(label(await s.next()), 'Cluster:api,fresh');
  const metrics = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
  assert.match(metrics, /fleetxds_warming_holds_total\{outcome="expired"\} 1\b/);
  s.close();
});

test("NACK containment: a node connecting while its group's newest version stands NACKed gets the last ACKed one", async () => {
  await app.close();
  app = await startServer(dir, { serveLastAckedOnNack: true });
  client.close();
  client = connect(app.grpcPort);
  const a = client.open();
  a.send({ node: { id: 'a', cluster: 'x' }, type_url: T.cluster });
  const v1 = await a.next();
  a.send(ack(v1));
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 6s\n') });
  const v2 = await a.next();
  a.send({
    type_url: T.cluster,
    response_nonce: v2.nonce,
    version_info: v1.version_info,
    error_detail: { code: 13, message: 'bad' },
  });
  await a.quiet(200);
  const b = client.open();
  b.send({ node: { id: 'b', cluster: 'x' }, type_url: T.cluster });
  const first = await b.next();
  assert.is(first.version_info, v1.version_info, 'served the last ACKed version, not the NACKed one');
  b.send(ack(first));
  assert.ok(await b.quiet(300), 'and stays on it while the NACKed version is current');
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 7s\n') });
  const v3 = await b.next();
  assert.is.not(v3.version_info, v1.version_info);
  assert.is.not(v3.version_info, v2.version_info);
  a.close();
  b.close();
});

test('a route change does not push clusters', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const cds = await s.next();
  s.send(ack(cds));
  s.send({ type_url: T.route, resource_names: ['edge'] });
  const rds = await s.next();
  s.send(ack(rds, { resource_names: ['edge'] }));
  await setTree({ 'edge.yaml': BASE['edge.yaml']!.replace('prefix: /api', 'prefix: /v2/api') });
  const next = await s.next();
  assert.is(next.type_url, T.route);
  assert.ok(await s.quiet(300), 'no CDS push for a route change');
  s.close();
});

test('the first request must carry a node; later ones need not', async () => {
  const bad = client.open();
  bad.send({ type_url: T.cluster });
  const st = await bad.status;
  assert.is(st.code, 3);
  assert.match(st.details, /node/);
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  await s.next();
  s.send({ type_url: T.listener });
  assert.equal(names(await s.next()), ['edge']);
  s.close();
});

test('the scripted client does not take a stream ended by the server for silence', async () => {
  const bad = client.open();
  bad.send({ type_url: T.cluster }); // no node: the server ends the stream with INVALID_ARGUMENT
  await bad.status;
  try {
    await bad.quiet(50);
    assert.unreachable('quiet() passed on a stream the server ended');
  } catch (err) {
    assert.match((err as Error).message, /stream ended \(INVALID_ARGUMENT: .*node.*\) while silence was expected/);
  }
  try {
    await bad.next(50);
    assert.unreachable('next() waited on a stream the server ended');
  } catch (err) {
    assert.match((err as Error).message, /stream ended \(INVALID_ARGUMENT/);
  }
});

test('ADS requires a type_url', async () => {
  const s = client.open();
  s.send({ node: NODE });
  const st = await s.status;
  assert.is(st.code, 3);
  assert.match(st.details, /type_url/);
});

test('a first request carrying a nonce from an older stream is answered (old Envoy behaviour)', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster, response_nonce: '42', version_info: 'old' });
  const r = await s.next();
  assert.equal(names(r), ['api', 'web']);
  s.close();
});

test('per-type services: StreamClusters defaults the type and refuses another', async () => {
  const cds = connect(app.grpcPort, 'cds');
  const s = cds.open();
  s.send({ node: NODE });
  const r = await s.next();
  assert.is(r.type_url, T.cluster);
  assert.equal(names(r), ['api', 'web']);
  const bad = cds.open();
  bad.send({ node: NODE, type_url: T.listener });
  assert.is((await bad.status).code, 3);
  s.close();
  cds.close();
});

test('resources are encoded once and the same bytes go to every client', async () => {
  const before = app.pipeline.caches.encoder.stats.encoded;
  const streams = [client.open(), client.open(), client.open()];
  const got: Json[] = [];
  for (const [i, s] of streams.entries()) {
    s.send({ node: { id: `n${i}`, cluster: 'c' }, type_url: T.cluster });
    got.push(await s.next());
  }
  assert.is(app.pipeline.caches.encoder.stats.encoded, before, 'serving clients encodes nothing');
  assert.equal(got[0]!.resources, got[1]!.resources);
  assert.equal(got[1]!.resources, got[2]!.resources);
  // A one-service change re-encodes only that service's resources (cluster + endpoints).
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.9:80') });
  assert.is(app.pipeline.caches.encoder.stats.encoded, before + 1, 'only the changed ClusterLoadAssignment is encoded');
  for (const s of streams) s.close();
});

test('requests larger than 4 MiB are accepted', async () => {
  const s = client.open();
  const many = Array.from({ length: 200_000 }, (_, i) => `cluster-with-a-long-name-${i}`);
  s.send({ node: NODE, type_url: T.endpoint, resource_names: [...many, 'api'] });
  const r = await s.next(10_000);
  assert.equal(names(r), ['api']);
  s.close();
});

test('an invalid tree is never served: the last good version stays', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const cds = await s.next();
  s.send(ack(cds));
  writeFileSync(
    join(dir, 'services.yaml'),
    `${BASE['services.yaml']}---\nkind: Service\nname: broken\nendpoints: oops\n`,
  );
  const out = (await app.reload()) as { status: string };
  assert.is(out.status, 'rejected');
  assert.ok(await s.quiet(300));
  assert.is(app.cache.current!.groups.get('default')!.types.cluster.version, cds.version_info);
  const rej = app.stores.rejections.latest()!;
  assert.ok(rej.diagnostics.some((d) => d.location?.file === 'services.yaml' && /endpoints/.test(d.path ?? '')));
  s.close();
});

test.run();
