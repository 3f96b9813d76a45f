/**
 * A gRPC server's listener goes only to the application that names it: an Envoy of the same node
 * group subscribes to every listener (wildcard) and would otherwise bind the application's port.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { isNamedOnly } from '../../src/snapshot/encoder.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { writeTree } from '../helpers/tree.ts';

test('wildcard subscribers get the Envoy listener, never the gRPC server listener', async () => {
  const r = await checkTree(
    writeTree({
      'all.yaml': `kind: Service
name: web
endpoints: [{ address: 10.0.0.1:8080 }]
---
kind: VirtualHost
name: web
domains: ["*"]
routes: [{ to: web }]
---
kind: Listener
name: edge
port: 8080
virtualHosts: [web]
---
kind: GrpcServer
name: orders
address: 10.0.0.5
port: 50051
`,
    }),
  );
  assert.ok(r.config, r.diagnostics.map(formatDiagnostic).join('\n'));
  const listeners = r.config.groups.get('default')!.types.listener;
  const server = 'grpc/server?xds.resource.listening_address=10.0.0.5:50051';
  assert.equal([...listeners.resources.keys()].sort(), ['edge', server]);
  assert.equal(
    listeners.wildcard.map((l) => l.name),
    ['edge'],
  );
  assert.ok(isNamedOnly('listener', { name: server }));
  assert.not.ok(isNamedOnly('listener', { name: 'edge' }));
});

test.run();
