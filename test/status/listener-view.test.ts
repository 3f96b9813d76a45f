/**
 * What the served view says of each listener, read from the Envoy resource: HTTP, TCP, TLS
 * passthrough, a proxyless gRPC target, or a gRPC server with its address, TLS and access rules.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { listenerView } from '../../src/status/listener-view.ts';

const views = async (c: string, group: string) => {
  const r = await checkTree(projectPath('test', 'golden', 'cases', c, 'input'));
  return [...r.config!.groups.get(group)!.types.listener.resources.values()].map((l) => listenerView(l.json));
};

test('gRPC servers: their address, TLS and access rules; a gRPC target: what it is', async () => {
  assert.equal(await views('grpc-servers', 'mesh'), [
    {
      name: 'grpc/server?xds.resource.listening_address=0.0.0.0:50052',
      kind: 'grpc-server',
      address: '0.0.0.0:50052',
      tls: false,
      passthrough: [],
      protections: [],
    },
    {
      name: 'grpc/server?xds.resource.listening_address=10.0.0.5:50051',
      kind: 'grpc-server',
      address: '10.0.0.5:50051',
      tls: true,
      passthrough: [],
      protections: ['rbac'],
    },
    { name: 'orders.mesh:50051', kind: 'grpc', tls: false, passthrough: [], protections: [] },
  ]);
});

test('HTTP, TCP and passthrough listeners', async () => {
  const kinds = (await views('tcp-listeners', 'default')).map((v) => [v.name, v.kind]);
  assert.ok(
    kinds.some(([, k]) => k === 'tcp'),
    JSON.stringify(kinds),
  );
  assert.ok(
    kinds.some(([, k]) => k === 'passthrough'),
    JSON.stringify(kinds),
  );
  assert.ok(
    kinds.some(([, k]) => k === 'http'),
    JSON.stringify(kinds),
  );
});

test.run();
