/**
 * Replicas fed the same tree serve byte-identical resources and versions (content hashes), so a
 * proxy that moves from one replica to another gets nothing resent: SotW, because its first
 * request names the version it holds; delta, because initial_resource_versions match. Three
 * replicas on loopback, each with its own database.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, dversions, names, T } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

let dir: string;
let replicas: RunningApp[];

test.before(async () => {
  dir = writeTree(BASE);
  replicas = [await startServer(dir), await startServer(dir), await startServer(dir)];
});
test.after(async () => {
  for (const r of replicas) await r.close();
});

const config = async (r: RunningApp) =>
  (await (await fetch(`http://127.0.0.1:${r.adminPort}/api/v1/config`)).json()) as { groups: unknown };

test('three replicas serve the same versions and resource versions', async () => {
  const [a, b, c] = await Promise.all(replicas.map(config));
  assert.equal(b!.groups, a!.groups);
  assert.equal(c!.groups, a!.groups);
  const bytes = (r: RunningApp) =>
    [...r.cache.current!.groups.get('default')!.types.cluster.resources.values()].map((x) => x.any.toString('hex'));
  assert.equal(bytes(replicas[1]!), bytes(replicas[0]!));
  assert.equal(bytes(replicas[2]!), bytes(replicas[0]!));
});

test('SotW: a proxy moving from replica A to B gets nothing resent, then B pushes the next change', async () => {
  const onA = connect(replicas[0]!.grpcPort);
  const s = onA.open();
  s.send({ node: { id: 'mover', cluster: 'c' }, type_url: T.cluster });
  const cds = await s.next();
  s.send({ type_url: T.listener });
  const lds = await s.next();
  s.close();
  onA.close();

  const onB = connect(replicas[1]!.grpcPort);
  const moved = onB.open();
  moved.send({ node: { id: 'mover', cluster: 'c' }, type_url: T.cluster, version_info: cds.version_info });
  moved.send({ type_url: T.listener, version_info: lds.version_info });
  assert.ok(await moved.quiet(500), 'nothing resent: the proxy holds what B serves');
  const status = replicas[1]!.registry.byNodeId('mover')[0]!;
  assert.is(status.types[T.cluster]?.ackedVersion, cds.version_info, 'B knows what the proxy holds');

  writeTree({ 'services.yaml': BASE['services.yaml']!.replace('10.0.0.2:8080', '10.0.0.3:8080') }, dir);
  for (const r of replicas) await r.reload();
  writeTree({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 3s\n') }, dir);
  for (const r of replicas) await r.reload();
  const next = await moved.next();
  assert.is(next.type_url, T.cluster);
  assert.equal(names(next), ['api', 'web']);
  assert.is.not(next.version_info, cds.version_info);
  moved.close();
  onB.close();
});

test('delta: with initial_resource_versions from replica A, replica C adds and removes nothing', async () => {
  const onA = connect(replicas[0]!.grpcPort, 'delta-ads');
  const s = onA.open();
  s.send({ node: { id: 'delta-mover', cluster: 'c' }, type_url: T.cluster });
  const first = await s.next();
  const held = dversions(first);
  s.close();
  onA.close();

  const onC = connect(replicas[2]!.grpcPort, 'delta-ads');
  const moved = onC.open();
  moved.send({ node: { id: 'delta-mover', cluster: 'c' }, type_url: T.cluster, initial_resource_versions: held });
  const r = await moved.next();
  assert.equal(r.resources ?? [], [], 'nothing added');
  assert.equal(r.removed_resources ?? [], [], 'nothing removed');
  assert.ok(await moved.quiet(300));
  moved.close();
  onC.close();
});

test.run();
