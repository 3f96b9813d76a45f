/**
 * Envoy's own zone-aware routing (Service `locality.zoneAware`, NodeGroup `workload`) through real
 * Envoy 1.40 and 1.36. The callers' workload "web" has one endpoint in zone a and three in zone b;
 * the service "api" three in each. Envoy's algorithm: a zone-a proxy (25% of web, 50% of api) sends
 * every request to its own zone; a zone-b proxy (75% of web, 50% of api) sends 50/75 of its requests
 * to its own zone and the rest to zone a, which has capacity left. Each proxy's bootstrap names web
 * as its local cluster, whose assignment fleetxds serves it over ADS. Envoy routes by zone every
 * service of a proxy with a local cluster; a service can turn it off (`zoneAware.routingEnabled: 0`).
 * A service with no endpoint where the connected proxies run is warned about when applied.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { ENVOY_VERSIONS, freePort } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';
import { spread, startZoneProxies, type ZoneProxy } from '../helpers/zone-lab.ts';

const REGION = 'lab-region';

interface ZoneBackend {
  zone: string;
  host: string;
  port: number;
  server?: Server;
}

const backends: ZoneBackend[] = [
  ...['127.0.0.31', '127.0.0.32', '127.0.0.33'].map((host) => ({ zone: 'zone-a', host, port: 0 })),
  ...['127.0.0.41', '127.0.0.42', '127.0.0.43'].map((host) => ({ zone: 'zone-b', host, port: 0 })),
];

/** The callers' own workload: where its instances run is all Envoy reads of it (nothing listens there). */
const WEB = [
  { zone: 'zone-a', address: '127.0.0.51:8080' },
  { zone: 'zone-b', address: '127.0.0.61:8080' },
  { zone: 'zone-b', address: '127.0.0.62:8080' },
  { zone: 'zone-b', address: '127.0.0.63:8080' },
];

const proxies: ZoneProxy[] = [];
let app: RunningApp;
let tree: string;
let docs: string[];

function listen(b: ZoneBackend): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    res.end(b.zone);
  });
  b.server = server;
  return new Promise((r) =>
    server.listen(0, b.host, () => {
      b.port = (server.address() as AddressInfo).port;
      r();
    }),
  );
}

test.before(async () => {
  try {
    for (const b of backends) await listen(b);
    for (const v of ENVOY_VERSIONS)
      for (const zone of ['zone-a', 'zone-b'])
        proxies.push({ id: `${zone}-${v}`, version: v, zone, port: await freePort() });
    docs = [
      `kind: Service
name: web
endpoints:
${WEB.map((w) => `  - { address: ${w.address}, region: ${REGION}, zone: ${w.zone} }`).join('\n')}
`,
      `kind: Service
name: api
locality: { zoneAware: {} }
endpoints:
${backends.map((b) => `  - { address: ${b.host}:${b.port}, region: ${REGION}, zone: ${b.zone} }`).join('\n')}
`,
      // The same endpoints with zone routing turned off for this service alone.
      `kind: Service
name: even
locality: { zoneAware: { routingEnabled: 0 } }
endpoints:
${backends.map((b) => `  - { address: ${b.host}:${b.port}, region: ${REGION}, zone: ${b.zone} }`).join('\n')}
`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ match: { prefix: /even }, to: even }, { to: api }]\n',
      // Each proxy in a group of its own (its own listener port), every group the web workload.
      ...proxies.flatMap((p) => {
        const g = `p-${p.id.replace('.', '')}`;
        return [
          `kind: NodeGroup\nname: ${g}\nmatch: { idPattern: ${p.id} }\nworkload: web\n`,
          `kind: Listener\nname: ${g}\naddress: 127.0.0.1\nport: ${p.port}\ngroups: [${g}]\nvirtualHosts: [site]\n`,
        ];
      }),
    ];
    tree = writeTree({ 'zones.yaml': docs.join('---\n') });
    app = await startServer(tree);
    await startZoneProxies(app, proxies, REGION, {
      nodeCluster: 'web',
      bootstrap: { localCluster: { service: 'web' } },
    });
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  for (const p of proxies) await p.envoy?.stop();
  await app?.close();
  for (const b of backends) {
    b.server?.closeAllConnections();
    await new Promise((r) => b.server?.close(r));
  }
});

const ZONE_STATS = 'cluster\\.api\\.lb_(zone_routing_all_directly|zone_routing_sampled|zone_routing_cross_zone)$';

/** The proxy's zone-routing counters, by their last name part. */
async function zoneStats(p: ZoneProxy): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [name, v] of Object.entries(await p.envoy!.stats(ZONE_STATS)))
    out[name.replace('cluster.api.lb_', '')] = Number(v);
  return out;
}

test("each proxy's local cluster is its workload's assignment, served by fleetxds", async () => {
  for (const p of proxies) {
    const hosts = async () => {
      const dump = await p.envoy!.configDump();
      const out: string[] = [];
      for (const c of dump.configs)
        for (const e of c.static_endpoint_configs ?? []) {
          if (e.endpoint_config?.cluster_name !== 'web') continue;
          for (const l of e.endpoint_config.endpoints ?? [])
            for (const ep of l.lb_endpoints ?? [])
              out.push(`${l.locality.zone} ${ep.endpoint.address.socket_address.address}`);
        }
      return out.sort();
    };
    const want = WEB.map((w) => `${w.zone} ${w.address.split(':')[0]}`).sort();
    await waitFor(
      `${p.id}'s local cluster`,
      async () => JSON.stringify(await hosts()) === JSON.stringify(want),
      10_000,
    );
  }
});

test('a zone-a proxy (25% of its workload, 50% of api) sends every request to zone a', async () => {
  for (const p of proxies.filter((x) => x.zone === 'zone-a')) {
    const before = await zoneStats(p);
    const counts = await spread(p.port, 1000);
    assert.equal(counts, { 'zone-a': 1000 }, p.id);
    const after = await zoneStats(p);
    assert.ok(after.zone_routing_all_directly! >= before.zone_routing_all_directly! + 1000, JSON.stringify(after));
    assert.is(after.zone_routing_cross_zone, before.zone_routing_cross_zone, p.id);
  }
});

test('a zone-b proxy (75% of its workload, 50% of api) keeps 2/3 in zone b and sends the rest to zone a', async () => {
  for (const p of proxies.filter((x) => x.zone === 'zone-b')) {
    const before = await zoneStats(p);
    const counts = await spread(p.port, 1000);
    // 1000 draws at 2/3: the standard deviation is about 15 requests; 600-730 is more than four of them.
    const local = counts['zone-b'] ?? 0;
    assert.ok(local >= 600 && local <= 730, `${p.id}: ${JSON.stringify(counts)}`);
    assert.is(local + (counts['zone-a'] ?? 0), 1000, `${p.id}: ${JSON.stringify(counts)}`);
    const after = await zoneStats(p);
    assert.ok(after.zone_routing_sampled! > before.zone_routing_sampled!, `${p.id}: ${JSON.stringify(after)}`);
    assert.ok(after.zone_routing_cross_zone! > before.zone_routing_cross_zone!, `${p.id}: ${JSON.stringify(after)}`);
  }
});

test('a service that turns zone routing off (routingEnabled: 0) is spread over both zones alike', async () => {
  for (const p of proxies.filter((x) => x.zone === 'zone-a')) {
    const counts = await spread(p.port, 1000, { path: '/even' });
    // Round robin over six endpoints, three per zone: half each, give or take the interleaving.
    const local = counts['zone-a'] ?? 0;
    assert.ok(local >= 400 && local <= 600, `${p.id}: ${JSON.stringify(counts)}`);
    assert.is(local + (counts['zone-b'] ?? 0), 1000, `${p.id}: ${JSON.stringify(counts)}`);
  }
});

test('a service the connected proxies have no endpoint near is warned about at validation, with counts', async () => {
  const lonely = `kind: Service
name: lonely
locality: { failover: true }
endpoints: [{ address: 127.0.0.99:80, region: ${REGION}, zone: zone-c }, { address: 127.0.0.98:80, region: far }]
`;
  const site = docs.findIndex((d) => d.startsWith('kind: VirtualHost'));
  const edited = docs.map((d, i) =>
    i === site ? d.replace('routes: [', 'routes: [{ match: { prefix: /lonely }, to: lonely }, ') : d,
  );
  writeTree({ 'zones.yaml': [...edited, lonely].join('---\n') }, tree);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
  const warnings = app.stores.revisions
    .latest()!
    .warnings.map((d) => formatDiagnostic(d))
    .filter((w) => w.includes('Service/lonely'));
  // Each proxy is a group of its own: one warning per group, naming where its node runs.
  assert.is(warnings.length, proxies.length, warnings.join('\n'));
  for (const p of proxies)
    assert.ok(
      warnings.some((w) =>
        w.includes(
          `1 connected node runs of node group "p-${p.id.replace('.', '')}" where this service has no ` +
            `endpoint: ${REGION}/${p.zone} (1)`,
        ),
      ),
      `${p.id}: ${warnings.join('\n')}`,
    );
});

test.run();
