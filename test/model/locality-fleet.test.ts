/**
 * Locality settings judged against the connected fleet: callers of a service that keeps traffic
 * near them (failover, zone-aware) that declare no locality, or run where it has no endpoint, are
 * warned about at the setting's file:line, with counts; a fleet where every caller is near an
 * endpoint, and a service that only weighs localities, get no warning.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { connectedFleet, type FleetNode } from '../../src/model/fleet.ts';
import { localityFleetWarnings } from '../../src/model/locality-checks.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { writeTree } from '../helpers/tree.ts';

const TREE = {
  'tree.yaml': `kind: Service
name: near
locality: { failover: true }
endpoints:
  - { address: 10.0.1.1:80, region: r, zone: a }
  - { address: 10.0.2.1:80, region: r, zone: b }
---
kind: Service
name: weighed
locality: { weights: [{ zone: a, weight: 3 }] }
endpoints: [{ address: 10.0.1.2:80, region: r, zone: a }]
---
kind: Service
name: zoned
locality: { zoneAware: { minClusterSize: 1 } }
endpoints: [{ address: 10.0.1.3:80, region: r, zone: a }]
---
kind: Service
name: web
endpoints: [{ address: 10.0.1.9:80, region: r, zone: a }]
---
kind: NodeGroup
name: edge
match: { cluster: edge }
workload: web
---
kind: Listener
name: main
port: 10000
groups: [edge]
virtualHosts: [main]
---
kind: VirtualHost
name: main
domains: ["*"]
routes:
  - { match: { prefix: /w }, to: weighed }
  - { match: { prefix: /z }, to: zoned }
  - { to: near }
`,
};

const at = (zone: string, subZone = ''): FleetNode => ({
  group: 'edge',
  userAgent: 'envoy/1.40.0',
  locality: { region: 'r', zone, subZone },
});

async function warnings(nodes: FleetNode[]): Promise<string[]> {
  const r = await checkTree(writeTree(TREE), undefined, { fleet: () => connectedFleet(nodes) });
  assert.ok(r.config, 'warnings never refuse the tree');
  return r.diagnostics.filter((d) => d.severity === 'warning').map((d) => formatDiagnostic(d));
}

test('callers near an endpoint of every service: no warning', async () => {
  assert.equal(await warnings([at('a'), at('a')]), []);
});

test('callers that declare no locality, and callers where a service has no endpoint, with counts', async () => {
  const nodes = [at('a'), at('b'), at('b'), at('c'), { group: 'edge', userAgent: 'envoy/1.36.2' }];
  const w = await warnings(nodes);
  assert.equal(w, [
    'tree.yaml:3:23: warning FXDS_INVALID_VALUE: Service/near locality.failover: node group "edge" has 1 connected ' +
      'node declaring no locality: they are served every endpoint alike (fleetxds bootstrap --region/--zone)',
    'tree.yaml:3:23: warning FXDS_INVALID_VALUE: Service/near locality.failover: 1 connected node runs of node ' +
      'group "edge" where this service has no endpoint: r/c (1); their requests cross zones',
    'tree.yaml:15:24: warning FXDS_INVALID_VALUE: Service/zoned locality.zoneAware: node group "edge" has 1 ' +
      'connected node declaring no locality: they are served every endpoint alike (fleetxds bootstrap --region/--zone)',
    'tree.yaml:15:24: warning FXDS_INVALID_VALUE: Service/zoned locality.zoneAware: 3 connected nodes run of ' +
      'node group "edge" where this service has no endpoint: r/b (2), r/c (1); their requests cross zones',
  ]);
});

test('a node with several streams (its ADS stream, its overrides layer stream) counts once', async () => {
  const node = (id: string): FleetNode => ({ ...at('c'), nodeId: id });
  const w = await warnings([node('n1'), node('n1'), node('n2')]);
  assert.match(
    w.join('\n'),
    /2 connected nodes run of node group "edge" where this service has no endpoint: r\/c \(2\)/,
  );
  assert.not.match(w.join('\n'), /\(3\)/);
});

test("zone-aware routing needs the caller's very locality: a sub-zone the endpoints lack is elsewhere", async () => {
  const w = await warnings([at('a', 'rack-1')]);
  assert.equal(w.length, 1, w.join('\n'));
  assert.match(w[0]!, /Service\/zoned locality\.zoneAware: 1 connected node .*: r\/a\/rack-1 \(1\)/);
});

test('a warning names 8 localities, the most nodes first, and counts the rest', async () => {
  const nodes = Array.from({ length: 12 }, (_, i) => Array.from({ length: i + 1 }, () => at(`far-${i}`))).flat();
  const { model } = await checkTree(writeTree(TREE));
  const [near] = localityFleetWarnings(model!, connectedFleet(nodes), () => TREE['tree.yaml']);
  assert.match(near!.message, /^78 connected nodes .*: r\/far-11 \(12\), r\/far-10 \(11\), .* and 4 more localities;/);
});

test.run();
