/**
 * The gRPC compatibility table: user agents read as implementation and release, releases compared
 * with the first that honours a feature, and warnings at the setting's file:line for the node
 * groups whose connected applications would ignore or refuse it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import {
  clientSupportWarnings,
  connectedClients,
  GRPC_FEATURES,
  grpcClientOf,
  honours,
} from '../../src/model/grpc-compat.ts';
import { connectedFleet } from '../../src/model/fleet.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { writeTree } from '../helpers/tree.ts';

test('user agents: implementation and release, or nothing for what is not a gRPC application', () => {
  const rows: [string, ReturnType<typeof grpcClientOf>][] = [
    ['gRPC Go/1.85.0', { kind: 'go', version: '1.85.0' }],
    ['gRPC Node Pure JS/1.14.1', { kind: 'node', version: '1.14.1' }],
    ['gRPC Java/1.60.0', { kind: 'java', version: '1.60.0' }],
    ['gRPC C-core/1.65.0', { kind: 'core', version: '1.65.0' }],
    ['gRPC Python/v1.66.1', { kind: 'core', version: '1.66.1' }],
    ['envoy/1.40.0', undefined],
    ['gRPC Go', undefined],
    ['gRPC Erlang/1.0.0', undefined],
    ['', undefined],
  ];
  for (const [agent, want] of rows) assert.equal(grpcClientOf(agent), want, agent);
});

test('a release honours a feature from the first release listed for its implementation', () => {
  const rows: [keyof typeof GRPC_FEATURES, 'go' | 'node' | 'java' | 'core', string, boolean][] = [
    ['retries', 'node', '1.8.0', true],
    ['retries', 'node', '1.7.9', false],
    ['retries', 'go', '1.41.0', true],
    ['retries', 'go', '1.40.10', false],
    ['logicalDns', 'go', '1.52.2', true],
    ['logicalDns', 'go', '1.52.1', false],
    ['leastRequest', 'go', '1.85.0', true],
    ['leastRequest', 'go', '1.72.9', false],
    ['leastRequest', 'java', '1.73.0', true],
    ['leastRequest', 'node', '1.14.1', false],
    ['rbac', 'node', '1.14.1', true],
    ['rbac', 'node', '1.13.0', false],
    ['tls', 'node', '1.13', true],
    ['weightedByLoad', 'go', '1.56.0', true],
    ['weightedByLoad', 'go', '1.55.9', false],
  ];
  for (const [feature, kind, version, want] of rows)
    assert.is(honours(GRPC_FEATURES[feature], kind, version), want, `${feature} ${kind} ${version}`);
});

const TREE = {
  'grpc.yaml': `kind: Service
name: orders
protocol: grpc
lb: least_request
endpoints: [{ address: 10.0.0.5:50051 }]
---
kind: GrpcService
name: orders
target: orders.mesh:50051
routes:
  - to: orders
    retries: { on: [unavailable], count: 2 }
---
kind: GrpcServer
name: orders
port: 50051
access: { allow: [{ methods: ["orders.Orders/*"] }] }
`,
};

test('warned at file:line, per group, naming the releases that would ignore or refuse the setting', async () => {
  const dir = writeTree(TREE);
  const { model } = await checkTree(dir);
  const text = TREE['grpc.yaml'];
  const clients = connectedClients([
    { group: 'default', userAgent: 'gRPC Node Pure JS/1.7.2' },
    { group: 'default', userAgent: 'gRPC Node Pure JS/1.7.2' },
    { group: 'default', userAgent: 'gRPC Node Pure JS/1.14.1' },
    { group: 'default', userAgent: 'gRPC Go/1.85.0' },
    { group: 'default', userAgent: 'envoy/1.40.0' },
    { group: 'other', userAgent: 'gRPC Node Pure JS/1.0.0' },
  ]);
  const got = clientSupportWarnings(model!, clients, () => text).map((d) => formatDiagnostic(d));
  assert.equal(got, [
    'grpc.yaml:12:14: warning FXDS_CLIENT_COMPAT: GrpcService/orders routes[0].retries: node group "default" has ' +
      'gRPC applications that ignore retries (gRFC A44): grpc-js 1.7.2 (2 nodes); supported from gRPC C-core ' +
      '1.40.0, grpc-java 1.40.1, grpc-go 1.41.0, grpc-js 1.8.0',
    'grpc.yaml:11:5: warning FXDS_CLIENT_COMPAT: GrpcService/orders routes[0]: node group "default" has gRPC ' +
      'applications that refuse least-request balancing (gRFC A48): grpc-js 1.7.2 (2 nodes), grpc-js 1.14.1 ' +
      '(1 node); supported from grpc-java 1.73.0, grpc-go 1.73.0',
    'grpc.yaml:17:9: warning FXDS_CLIENT_COMPAT: GrpcServer/orders access: node group "default" has gRPC ' +
      'applications that refuse access rules (gRFC A41): grpc-js 1.7.2 (2 nodes); supported from gRPC C-core ' +
      '1.51.0, grpc-java 1.42.0, grpc-go 1.42.0, grpc-js 1.14.0',
    'grpc.yaml:17:9: warning FXDS_CLIENT_COMPAT: GrpcServer/orders access: node group "default": access rules ' +
      '(gRFC A41): grpc-js needs GRPC_XDS_EXPERIMENTAL_RBAC=true in the application environment, or it refuses them',
  ]);
  // Up-to-date applications of every kind: nothing to say.
  const current = connectedClients([{ group: 'default', userAgent: 'gRPC Java/1.80.0' }]);
  assert.equal(
    clientSupportWarnings(model!, current, () => text),
    [],
  );
});

test('clients claiming many releases: a warning names 8, the most nodes first, and counts the rest', async () => {
  const { model } = await checkTree(writeTree(TREE));
  const nodes = Array.from({ length: 20 }, (_, i) => ({
    group: 'default',
    userAgent: `gRPC Node Pure JS/1.7.${i}-${'x'.repeat(10_000)}`,
  }));
  nodes.push({ group: 'default', userAgent: 'gRPC Node Pure JS/1.7.19' });
  const clients = connectedClients(nodes);
  assert.is(clients.get('default')!.length, 20, 'one entry per release, not per text sent');
  const retries = clientSupportWarnings(model!, clients, () => TREE['grpc.yaml'])[0]!.message;
  assert.match(retries, /: grpc-js 1\.7\.19 \(2 nodes\), grpc-js 1\.7\.0 \(1 node\), .* and 12 more releases;/);
  assert.ok(retries.length < 600, `${retries.length} characters`);
});

test('the server warns at validation from the applications connected to it', async () => {
  const dir = writeTree(TREE);
  const r = await checkTree(dir, undefined, {
    fleet: () => connectedFleet([{ group: 'default', userAgent: 'gRPC Go/1.40.0' }]),
  });
  assert.ok(r.config);
  assert.match(r.diagnostics.map((d) => formatDiagnostic(d)).join('\n'), /grpc-go 1\.40\.0 \(1 node\)/);
});

test.run();
