/**
 * Failover by distance (Service `locality.failover`) through real Envoy 1.40 and 1.36 and a
 * @grpc/grpc-js-xds client. Backends on loopback addresses stand for two zones of one region. Each
 * proxy says where it runs (node.locality, as `fleetxds bootstrap --region --zone` writes it) and
 * is served the endpoints of its own zone as priority 0, the other zone's as priority 1: its
 * requests stay in its zone, move to the other zone when its own fail health checks, with no
 * failed request, and come back when they recover; endpoints registered at run time move their
 * callers the same way when a zone drains. A gRPC client in zone b prefers zone b and fails over to
 * zone a when zone b's backend is gone.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { grpcBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { ENVOY_VERSIONS, freePort } from '../helpers/envoy.ts';
import { closeIdleConnections, httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { startBackend, xdsGreeterClient, type Backend, type GreeterClientHandle } from '../helpers/greeter.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';
import { spread, startZoneProxies, type ZoneProxy } from '../helpers/zone-lab.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

const REGION = 'lab-region';

/** An HTTP backend that answers its name; `failing` turns its health check to 503 (it still serves). */
interface ZoneBackend {
  name: string;
  zone: string;
  host: string;
  port: number;
  failing: boolean;
  server?: Server;
}

function listen(b: ZoneBackend): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/healthz') res.writeHead(b.failing ? 503 : 200);
    res.end(b.name);
  });
  b.server = server;
  return new Promise((r) =>
    server.listen(b.port, b.host, () => {
      b.port = (server.address() as AddressInfo).port;
      r();
    }),
  );
}

async function stop(b: ZoneBackend): Promise<void> {
  const s = b.server;
  b.server = undefined;
  s?.closeAllConnections();
  await new Promise((r) => s?.close(r));
}

const backends: ZoneBackend[] = [
  { name: 'a1', zone: 'zone-a', host: '127.0.0.11', port: 0, failing: false },
  { name: 'a2', zone: 'zone-a', host: '127.0.0.12', port: 0, failing: false },
  { name: 'b1', zone: 'zone-b', host: '127.0.0.21', port: 0, failing: false },
  { name: 'b2', zone: 'zone-b', host: '127.0.0.22', port: 0, failing: false },
];

/** The proxies: each release in zone a, and 1.40 in zone b too. */
const proxies: ZoneProxy[] = [];

let app: RunningApp;
let grpcA: Backend | undefined;
let grpcB: Backend | undefined;
let client: GreeterClientHandle | undefined;

const zoneOf = (name: string) => backends.find((b) => b.name === name)?.zone;

test.before(async () => {
  try {
    for (const b of backends) await listen(b);
    grpcA = await startBackend('grpc-a');
    grpcB = await startBackend('grpc-b');
    for (const v of ENVOY_VERSIONS) proxies.push({ id: `a-${v}`, version: v, zone: 'zone-a', port: await freePort() });
    proxies.push({ id: 'b-1.40', version: '1.40', zone: 'zone-b', port: await freePort() });
    const endpoints = backends
      .map((b) => `  - { address: ${b.host}:${b.port}, region: ${REGION}, zone: ${b.zone} }`)
      .join('\n');
    const docs = [
      `kind: Service
name: api
locality: { failover: true }
healthCheck:
  { type: http, path: /healthz, interval: 200ms, noTrafficInterval: 200ms, timeout: 1s, unhealthyThreshold: 1, healthyThreshold: 1 }
endpoints:
${endpoints}
`,
      // Endpoints that register at run time, each saying its zone; draining a zone moves its callers.
      `kind: Service
name: reg
locality: { failover: true }
registration: { tokens: ["${createHash('sha256').update('vm').digest('hex')}"], ttl: 1h, addresses: [127.0.0.0/8] }
`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ match: { prefix: /reg }, to: reg }, { to: api }]\n',
      // Each proxy in a group of its own, with its own listener (Envoys binding one port would share it).
      ...proxies.flatMap((p) => {
        const g = `p-${p.id.replace('.', '')}`;
        return [
          `kind: NodeGroup\nname: ${g}\nmatch: { idPattern: ${p.id} }\n`,
          `kind: Listener\nname: ${g}\naddress: 127.0.0.1\nport: ${p.port}\ngroups: [${g}]\nvirtualHosts: [site]\n`,
        ];
      }),
      `kind: Service
name: greeter-svc
protocol: grpc
locality: { failover: true }
endpoints:
  - { address: 127.0.0.1:${grpcA.port}, region: ${REGION}, zone: zone-a }
  - { address: 127.0.0.1:${grpcB.port}, region: ${REGION}, zone: zone-b }
`,
      'kind: NodeGroup\nname: grpc\nmatch: { cluster: greeter-clients }\n',
      'kind: GrpcService\nname: greeter\ntarget: greeter.internal:50051\ngroups: [grpc]\nroutes: [{ to: greeter-svc }]\n',
    ];
    app = await startServer(writeTree({ 'locality.yaml': docs.join('---\n') }), { rest: {} });
    await startZoneProxies(app, proxies, REGION, { nodeCluster: 'edge' });
    const bootstrap = grpcBootstrap(
      { id: 'grpc-b', cluster: 'greeter-clients', locality: { region: REGION, zone: 'zone-b', subZone: '' } },
      { host: '127.0.0.1', port: app.grpcPort },
    );
    client = xdsGreeterClient('greeter.internal:50051', bootstrap);
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  client?.close();
  for (const p of proxies) await p.envoy?.stop();
  await app?.close();
  for (const b of backends) await stop(b);
  await grpcA?.close();
  await grpcB?.close();
});

/** `n` requests through a proxy, `parallel` at a time: how many each zone answered, and failures. */
const zoneSpread = (port: number, n: number, parallel = 20, path = '/') =>
  spread(port, n, { parallel, path, keyOf: (body) => zoneOf(body) ?? body });

/** The priority of each endpoint (by host) in the proxy's copy of the api cluster's assignment. */
async function priorities(p: ZoneProxy): Promise<Record<string, number>> {
  const dump = await p.envoy!.configDump();
  const out: Record<string, number> = {};
  for (const c of dump.configs)
    for (const e of c.dynamic_endpoint_configs ?? []) {
      const cla = e.endpoint_config;
      if (cla?.cluster_name !== 'api') continue;
      for (const l of cla.endpoints ?? [])
        for (const ep of l.lb_endpoints ?? []) out[ep.endpoint.address.socket_address.address] = l.priority ?? 0;
    }
  return out;
}

test('each proxy is served its own zone as priority 0 and the other zone as priority 1', async () => {
  for (const p of proxies) {
    const want: Record<string, number> = {};
    for (const b of backends) want[b.host] = b.zone === p.zone ? 0 : 1;
    // Compared whatever the order: a proxy's assignment lists its nearest endpoints first.
    const text = (o: Record<string, number>) => JSON.stringify(Object.entries(o).sort());
    await waitFor(`${p.id}'s priorities`, async () => text(await priorities(p)) === text(want), 10_000);
    assert.equal(await priorities(p), want, p.id);
  }
});

test('1,000 requests from each proxy stay in its zone (at least 95%)', async () => {
  for (const p of proxies) {
    const counts = await zoneSpread(p.port, 1000);
    const local = counts[p.zone] ?? 0;
    assert.ok(local >= 950, `${p.id} in ${p.zone}: ${JSON.stringify(counts)}`);
    assert.is(Object.keys(counts).filter((k) => k.startsWith('failed')).length, 0, JSON.stringify(counts));
  }
});

/** Three workers per zone-a proxy sending `path` back to back; `stop` says what they sent and saw. */
function zoneALoad(path: string): {
  stop(): Promise<{ sent: number; failures: string[]; seen: Map<string, Set<string>> }>;
} {
  const zoneA = proxies.filter((p) => p.zone === 'zone-a');
  let running = true;
  let sent = 0;
  const failures: string[] = [];
  const seen = new Map<string, Set<string>>(zoneA.map((p) => [p.id, new Set<string>()]));
  const workers = zoneA.flatMap((p) =>
    [0, 1, 2].map(async () => {
      while (running) {
        sent++;
        const r = await httpGet(p.port, path).catch((e: Error) => ({ status: 0, body: e.message }));
        if (r.status !== 200) failures.push(`${p.id}: ${r.status} ${r.body.slice(0, 80)}`);
        else seen.get(p.id)!.add(zoneOf(r.body) ?? r.body);
      }
    }),
  );
  return {
    stop: async () => {
      running = false;
      await Promise.all(workers);
      return { sent, failures, seen };
    },
  };
}

/** Waits until every zone-a proxy answers `path` from `zone` only; on a timeout, what its cluster's checks saw. */
async function zoneAOn(zone: string, path: string): Promise<void> {
  for (const p of proxies.filter((x) => x.zone === 'zone-a'))
    await waitFor(
      `${p.id} answered ${path} from ${zone} only`,
      async () => (await zoneSpread(p.port, 40, 4, path))[zone] === 40,
      15_000,
    ).catch(async (e: Error) => {
      const cluster = path === '/' ? 'api' : path.slice(1);
      const checks = await p.envoy!.stats(`cluster.${cluster}.(health_check|membership)`);
      throw new Error(`${e.message}: ${JSON.stringify(checks)}`);
    });
}

test("zone a's endpoints fail their health checks, then stop: zone a's proxies move to zone b and back, no request fails", async () => {
  const load = zoneALoad('/');
  await new Promise((r) => setTimeout(r, 300));
  for (const b of backends.filter((x) => x.zone === 'zone-a')) b.failing = true;
  await zoneAOn('zone-b', '/');
  for (const b of backends.filter((x) => x.zone === 'zone-a')) await stop(b);
  closeIdleConnections();
  await new Promise((r) => setTimeout(r, 1000));
  for (const b of backends.filter((x) => x.zone === 'zone-a')) {
    b.failing = false;
    await listen(b);
  }
  await zoneAOn('zone-a', '/');
  const { sent, failures, seen } = await load.stop();
  assert.ok(sent > 100, `only ${sent} requests were sent`);
  assert.equal(failures, [], `${failures.length} of ${sent} requests failed`);
  for (const p of proxies.filter((x) => x.zone === 'zone-a'))
    assert.equal([...seen.get(p.id)!].sort(), ['zone-a', 'zone-b'], p.id);
});

/** A registration call as `fleetxds register` makes it, for backend `b` of service reg. */
async function registration(method: 'PUT' | 'POST', b: ZoneBackend): Promise<void> {
  const at = `${b.host}:${b.port}`;
  const r = await fetch(
    `http://127.0.0.1:${app.restPort}/v1/services/reg/endpoints/${encodeURIComponent(at)}${method === 'POST' ? '/drain' : ''}`,
    {
      method,
      headers: { authorization: 'Bearer vm', 'content-type': 'application/json' },
      body: JSON.stringify(method === 'PUT' ? { region: REGION, zone: b.zone } : {}),
    },
  );
  assert.is(r.status, 200, await r.text());
}

test("registered endpoints: draining zone a's moves zone a's proxies to zone b, no request fails", async () => {
  for (const b of backends) await registration('PUT', b);
  await zoneAOn('zone-a', '/reg');
  const load = zoneALoad('/reg');
  await new Promise((r) => setTimeout(r, 300));
  for (const b of backends.filter((x) => x.zone === 'zone-a')) await registration('POST', b);
  await zoneAOn('zone-b', '/reg');
  await new Promise((r) => setTimeout(r, 300));
  const { sent, failures } = await load.stop();
  assert.ok(sent > 100, `only ${sent} requests were sent`);
  assert.equal(failures, [], `${failures.length} of ${sent} requests failed`);
});

test('a gRPC client in zone b prefers zone b, and fails over to zone a when zone b is gone', async () => {
  await waitFor(
    'first RPC',
    async () => (await client!.sayHello('x', 5000).catch(() => undefined)) !== undefined,
    20_000,
  );
  for (let i = 0; i < 20; i++) assert.is((await client!.sayHello(`b${i}`)).backend, 'grpc-b');
  await grpcB!.close();
  grpcB = undefined;
  await waitFor(
    'RPCs on zone a',
    async () => (await client!.sayHello('a', 2000).catch(() => undefined))?.backend === 'grpc-a',
    20_000,
  );
  for (let i = 0; i < 20; i++) assert.is((await client!.sayHello(`a${i}`)).backend, 'grpc-a');
});

test.run();
