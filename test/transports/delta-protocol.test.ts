/**
 * Delta xDS rules (docs/xds-protocol.md §5.3), each with a scripted client over a real socket.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, dnames, dversions, T, type Json } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, policyEdgeTree, writeTree } from '../helpers/tree.ts';

const NODE = { id: 'delta-1', cluster: 'edge' };
let dir: string;
let app: RunningApp;
let client: ReturnType<typeof connect>;

async function setTree(files: Record<string, string>): Promise<void> {
  writeTree(files, dir);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
}
const ack = (res: Json, extra: Json = {}) => ({ type_url: res.type_url, response_nonce: res.nonce, ...extra });
const withService = (name: string, ip: string) => ({
  [`${name}.yaml`]: `kind: Service\nname: ${name}\nendpoints: [{ address: ${ip}:80 }]\n`,
  'edge.yaml': BASE['edge.yaml']!.replace(
    '  - to: web',
    `  - match: { prefix: /${name} }\n    to: ${name}\n  - to: web`,
  ),
});

test.before.each(async () => {
  dir = writeTree(BASE);
  app = await startServer(dir);
  client = connect(app.grpcPort, 'delta-ads');
});
test.after.each(async () => {
  client.close();
  await app.close();
});

test('wildcard (legacy empty first request): everything, wrapped with name and version, unique nonces', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const r = await s.next();
  assert.is(r.type_url, T.cluster);
  assert.equal(dnames(r), ['api', 'web']);
  for (const res of r.resources) {
    assert.ok(res.version);
    assert.is(res.resource['@type'], T.cluster);
    assert.is(res.resource.name, res.name);
  }
  assert.ok(r.nonce);
  s.send({ type_url: T.listener, resource_names_subscribe: ['*'] });
  const l = await s.next();
  assert.equal(dnames(l), ['edge']);
  assert.is.not(l.nonce, r.nonce);
  s.close();
});

test('an initial wildcard request with nothing to send still gets an (empty) response', async () => {
  // Serving no listener at all takes an explicit Guard (see removal-guard.ts).
  await setTree({
    'edge.yaml':
      'kind: VirtualHost\nname: unused\ndomains: [x]\nroutes: [{ to: web }]\n---\nkind: Guard\nname: ' +
      'empty-on-purpose\nallowEmpty: true\n',
  });
  const s = client.open();
  s.send({ node: NODE, type_url: T.listener });
  const r = await s.next();
  assert.equal(r.resources ?? [], []);
  assert.equal(r.removed_resources ?? [], []);
  s.close();
});

test('subscribe and unsubscribe by name; an unsubscribe alone gets no response', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names_subscribe: ['api'] });
  const r1 = await s.next();
  assert.equal(dnames(r1), ['api']);
  s.send(ack(r1, { resource_names_subscribe: ['web'] }));
  const r2 = await s.next();
  assert.equal(dnames(r2), ['web'], 'only the newly subscribed one');
  s.send(ack(r2));
  s.send({ type_url: T.endpoint, resource_names_unsubscribe: ['web'] });
  assert.ok(await s.quiet(300));
  // Changes to an unsubscribed resource are not pushed; to a subscribed one they are.
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') });
  assert.ok(await s.quiet(300));
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('10.0.0.2:8080', '10.0.0.3:8080') });
  const r3 = await s.next();
  assert.equal(dnames(r3), ['api']);
  s.close();
});

test('a subscribed name that does not exist is answered in removed_resources, then sent when it appears', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names_subscribe: ['later'] });
  const r1 = await s.next();
  assert.equal(r1.removed_resources, ['later']);
  assert.equal(r1.resources ?? [], []);
  s.send(ack(r1));
  assert.ok(await s.quiet(200));
  await setTree(withService('later', '10.9.9.9'));
  const r2 = await s.next();
  assert.equal(dnames(r2), ['later']);
  s.close();
});

test('only changed resources are sent; a deletion is sent as removed_resources', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const r1 = await s.next();
  s.send(ack(r1));
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 3s\n') });
  const r2 = await s.next();
  assert.equal(dnames(r2), ['web'], 'only the changed cluster');
  assert.is(r2.resources[0].resource.connect_timeout, '3s');
  s.send(ack(r2));
  await setTree({ 'edge.yaml': BASE['edge.yaml']!.replace('  - to: web\n', '  - to: api\n') });
  const r3 = await s.next();
  assert.equal(r3.removed_resources, ['web']);
  assert.equal(r3.resources ?? [], []);
  s.close();
});

test('a resubscribed name is sent even though the client had it', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names_subscribe: ['api'] });
  const r1 = await s.next();
  s.send(ack(r1, { resource_names_subscribe: ['api'] }));
  const r2 = await s.next();
  assert.equal(dnames(r2), ['api']);
  s.close();
});

test('reconnect with initial_resource_versions: unchanged skipped, changed sent, removals that happened while away sent', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  const r1 = await s.next();
  const held = dversions(r1);
  s.close();
  // While disconnected: web is deleted, api changes, new appears.
  await setTree({
    'services.yaml': BASE['services.yaml']!.replace('name: api\n', 'name: api\nconnectTimeout: 4s\n'),
    ...withService('fresh', '10.5.5.5'),
    'edge.yaml': withService('fresh', '10.5.5.5')['edge.yaml'].replace('  - to: web\n', '  - to: api\n'),
  });
  const s2 = client.open();
  s2.send({ node: NODE, type_url: T.cluster, initial_resource_versions: held });
  const r2 = await s2.next();
  assert.equal(dnames(r2), ['api', 'fresh']);
  assert.equal(r2.removed_resources, ['web']);
  s2.close();
  // Reconnecting with exactly the current versions sends nothing but the empty wildcard answer.
  const s3 = client.open();
  const now: Record<string, string> = { ...held, ...dversions(r2) };
  delete now.web;
  s3.send({ node: NODE, type_url: T.cluster, initial_resource_versions: now });
  const r3 = await s3.next();
  assert.equal(r3.resources ?? [], []);
  assert.equal(r3.removed_resources ?? [], []);
  s3.close();
});

test('subscription changes are honoured even with a stale nonce', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.endpoint, resource_names_subscribe: ['api'] });
  const r1 = await s.next();
  s.send({ type_url: T.endpoint, response_nonce: 'stale-or-unknown', resource_names_subscribe: ['web'] });
  const r2 = await s.next();
  assert.equal(dnames(r2), ['web']);
  assert.is.not(r2.nonce, r1.nonce);
  s.close();
});

test('a NACK is recorded and the NACKed version is not pushed again', async () => {
  const s = client.open();
  s.send({ node: { ...NODE, id: 'delta-nacker' }, type_url: T.cluster });
  const r1 = await s.next();
  s.send({ type_url: T.cluster, response_nonce: r1.nonce, error_detail: { code: 13, message: 'nope' } });
  assert.ok(await s.quiet(400));
  assert.is(app.registry.byNodeId('delta-nacker')[0]!.types[T.cluster]!.lastNack!.message, 'nope');
  assert.is(app.stores.nacks.list('delta-nacker')[0]!.transport, 'grpc-ads-delta');
  s.close();
});

test('after a cluster changes, its unchanged endpoints are sent again (no warming stall), after CDS', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.endpoint, resource_names_subscribe: ['api', 'web'] });
  const a = await s.next();
  const b = await s.next();
  s.send(ack(a));
  s.send(ack(b));
  await setTree({ 'services.yaml': BASE['services.yaml']!.replace('name: api\n', 'name: api\nconnectTimeout: 8s\n') });
  const c1 = await s.next();
  const c2 = await s.next();
  assert.equal([c1.type_url, c2.type_url], [T.cluster, T.endpoint]);
  assert.equal(dnames(c2), ['api']);
  s.close();
});

test('ordering on one ADS stream: cluster, endpoints, listener, route; removal of the old cluster last', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.endpoint, resource_names_subscribe: ['api', 'web', 'fresh'] });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.route, resource_names_subscribe: ['edge'] });
  for (let i = 0; i < 4; i++) s.send(ack(await s.next()));
  await s.quiet(200);
  // One change: add cluster `fresh`, route to it instead of `web` (so `web` goes), and move the listener.
  const files = withService('fresh', '10.5.5.5');
  files['edge.yaml'] = files['edge.yaml']
    .replace('  - to: web\n', '  - to: fresh\n')
    .replace('port: 8080', 'port: 8081');
  await setTree(files);
  const got: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await s.next();
    got.push(
      `${r.type_url.split('.').pop()}${r.removed_resources?.length ? ` -${r.removed_resources.join(',')}` : ''}`,
    );
  }
  assert.equal(got, ['Cluster', 'ClusterLoadAssignment', 'Listener', 'RouteConfiguration', 'Cluster -web']);
  s.close();
});

test('delta: a token-policy edit is an extension config alone; with a route change, the config goes first', async () => {
  await setTree(policyEdgeTree('k1'));
  const JWT = 'edge/envoy.filters.http.jwt_authn';
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.route, resource_names_subscribe: ['edge'] });
  s.send({ type_url: T.extension, resource_names_subscribe: [JWT] });
  for (let i = 0; i < 4; i++) s.send(ack(await s.next()));
  assert.ok(await s.quiet(200));
  await setTree(policyEdgeTree('k2'));
  const ecds = await s.next();
  assert.equal([ecds.type_url, dnames(ecds)], [T.extension, [JWT]]);
  s.send(ack(ecds));
  assert.ok(await s.quiet(300), 'nothing but the extension config');
  await setTree(policyEdgeTree('k2', true));
  const got = [(await s.next()).type_url, (await s.next()).type_url];
  assert.equal(got, [T.extension, T.route]);
  s.close();
});

test('delta: routes to a cluster added by the same change wait until the client subscribed to its endpoints', async () => {
  const s = client.open();
  s.send({ node: NODE, type_url: T.cluster });
  s.send({ type_url: T.endpoint, resource_names_subscribe: ['api', 'web'] });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.route, resource_names_subscribe: ['edge'] });
  for (let i = 0; i < 4; i++) s.send(ack(await s.next()));
  assert.ok(await s.quiet(200));
  const files = withService('fresh', '10.5.5.5');
  files['edge.yaml'] = files['edge.yaml'].replace('  - to: web\n', '  - to: fresh\n');
  await setTree(files);
  const cds = await s.next();
  assert.equal([cds.type_url, dnames(cds)], [T.cluster, ['fresh']]);
  assert.ok(await s.quiet(400), 'no route to `fresh` before its endpoints');
  s.send(ack(cds));
  assert.ok(await s.quiet(200), 'the ACK of the clusters does not end the wait');
  s.send({ type_url: T.endpoint, resource_names_subscribe: ['fresh'] });
  const got: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await s.next();
    got.push(
      `${r.type_url.split('.').pop()}:${dnames(r).join(',')}${r.removed_resources?.length ? ` -${r.removed_resources}` : ''}`,
    );
  }
  assert.equal(got, [
    'ClusterLoadAssignment:fresh',
    'RouteConfiguration:edge',
    'Cluster: -web',
    'ClusterLoadAssignment: -web',
  ]);
  assert.ok(await s.quiet(200), 'each held response was sent once');
  s.close();
});

test('per-type delta service: DeltaClusters', async () => {
  const cds = connect(app.grpcPort, 'delta-cds');
  const s = cds.open();
  s.send({ node: NODE });
  const r = await s.next();
  assert.is(r.type_url, T.cluster);
  assert.equal(dnames(r), ['api', 'web']);
  s.close();
  cds.close();
});

test.run();
