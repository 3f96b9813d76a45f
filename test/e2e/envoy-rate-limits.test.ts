/**
 * Rate limits through real Envoy 1.40 and 1.36 (one Envoy each):
 *  - local: 150 requests at once against 100 per minute give 100 +- 5 answers 200 and the rest 429
 *    with x-ratelimit-* headers; a route with rateLimit: false is not limited; a limit per client
 *    address gives each client its own bucket;
 *  - global, through Envoy's rate-limit service protocol to a test server speaking
 *    envoy.service.ratelimit.v3: the descriptors of the virtual host and the route reach it with the
 *    listener's domain, and its OVER_LIMIT answer is a 429; with the service down, failOpen decides.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { freePorts, perRelease, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startRateLimitServer, type GrpcTestServer, type RateLimitRequest } from '../helpers/envoy-services.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

interface Ports {
  local: number;
  perClient: number;
  global: number;
  downOpen: number;
  downClosed: number;
}

let app: RunningApp;
let rls: GrpcTestServer & { requests: RateLimitRequest[] };
const servers: net.Server[] = [];
const envoys: EnvoyProcess[] = [];
const byRelease = new Map<EnvoyVersion, Ports>();

function get(
  port: number,
  path: string,
  opts: { from?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path, agent: false, localAddress: opts.from, headers: opts.headers },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
      },
    );
    req.on('error', reject);
  });
}

/** `n` requests sent at once on one HTTP/2 connection; the status and headers of each. */
async function burst(port: number, path: string, n: number): Promise<http2.IncomingHttpHeaders[]> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    return await Promise.all(
      Array.from(
        { length: n },
        () =>
          new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
            const s = session.request({ ':path': path });
            s.on('response', (h) => {
              s.resume();
              s.on('end', () => resolve(h));
            });
            s.on('error', reject);
            s.end();
          }),
      ),
    );
  } finally {
    session.close();
  }
}

test.before(async () => {
  try {
    const web = http.createServer((_q, s) => s.end('ok'));
    servers.push(web);
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    const backend = (web.address() as net.AddressInfo).port;
    rls = await startRateLimitServer((r) =>
      r.descriptors.some((d) => d.entries.some((e) => e.key === 'api_key' && e.value === 'spent'))
        ? 'OVER_LIMIT'
        : 'OK',
    );
    const closed = await freePort();
    const docs = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${backend} }]\n`,
      `kind: Service\nname: rls\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${rls.port} }]\n`,
      `kind: Service\nname: rls-down\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${closed} }]\n`,
      `kind: VirtualHost
name: limited
domains: ["*"]
routes:
  - { match: { prefix: /unlimited }, to: web, rateLimit: false }
  - to: web
`,
      `kind: VirtualHost
name: per-client
domains: ["*"]
routes:
  - { to: web, rateLimit: { requests: 3, per: 1m, by: clientAddress } }
`,
      `kind: VirtualHost
name: global
domains: ["*"]
globalRateLimit:
  - [{ generic: { key: vhost, value: global } }, { clientAddress: true }]
routes:
  - match: { prefix: /api }
    to: web
    globalRateLimit:
      - [{ header: { name: x-api-key, key: api_key } }]
  - to: web
`,
    ];
    const listener = (name: string, g: string, port: number, vhost: string, extra: string) =>
      `kind: Listener\nname: ${name}-${g}\naddress: 127.0.0.1\nport: ${port}\ngroups: [${g}]\n` +
      `virtualHosts: [${vhost}]\n${extra}`;
    const releases = await perRelease(
      freePorts('local', 'perClient', 'global', 'downOpen', 'downClosed'),
      (_v, p, g) => [
        listener('local', g, p.local, 'limited', 'rateLimit: { requests: 100, per: 1m }\n'),
        listener('per-client', g, p.perClient, 'per-client', ''),
        listener('global', g, p.global, 'global', 'rateLimitService: { service: rls, domain: edge, timeout: 1s }\n'),
        listener('open', g, p.downOpen, 'global', 'rateLimitService: { service: rls-down, domain: edge }\n'),
        listener(
          'closed',
          g,
          p.downClosed,
          'global',
          'rateLimitService: { service: rls-down, domain: edge, failOpen: false }\n',
        ),
      ],
    );
    for (const [v, p] of releases.ports) byRelease.set(v, p);
    app = await startServer(writeTree({ 'limits.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(...(await startEnvoys(app, (v) => get(byRelease.get(v)!.global, '/').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  await rls?.close();
  for (const s of servers) s.close();
});

// The bucket refills continuously (100 a minute is under two a second), so a burst that a slow machine
// spreads over a second still meets a full bucket plus at most two tokens; each release's listener takes
// one burst only.
test('local: 150 requests at once against 100 per minute: 100 +- 5 pass, the rest get 429 with the headers', async () => {
  for (const v of ENVOY_VERSIONS) {
    const answers = await burst(byRelease.get(v)!.local, '/x', 150);
    const ok = answers.filter((h) => Number(h[':status']) === 200).length;
    const limited = answers.filter((h) => Number(h[':status']) === 429);
    assert.ok(Math.abs(ok - 100) <= 5, `Envoy ${v}: ${ok} answered 200`);
    assert.is(ok + limited.length, 150, `Envoy ${v}: every other answer is 429`);
    const h = limited[0]!;
    assert.is(h['x-ratelimit-limit'], '100', `Envoy ${v}: ${JSON.stringify(h)}`);
    assert.is(h['x-ratelimit-remaining'], '0');
    assert.ok(h['x-ratelimit-reset'] !== undefined);
    const free = await burst(byRelease.get(v)!.local, '/unlimited', 20);
    assert.ok(
      free.every((x) => Number(x[':status']) === 200),
      `Envoy ${v}: rateLimit: false is not limited`,
    );
  }
});

test('local, per client address: each client has a bucket of its own', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.perClient;
    const statuses = async (from: string) => {
      const out: number[] = [];
      for (let i = 0; i < 4; i++) out.push((await get(p, '/', { from })).status);
      return out;
    };
    assert.equal(await statuses('127.0.0.1'), [200, 200, 200, 429], `Envoy ${v}: 127.0.0.1`);
    assert.equal(await statuses('127.0.0.2'), [200, 200, 200, 429], `Envoy ${v}: 127.0.0.2 has its own bucket`);
  }
});

test('global: the descriptors reach the rate-limit service and its OVER_LIMIT is a 429', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.global;
    rls.requests.length = 0;
    assert.is((await get(p, '/page')).status, 200, `Envoy ${v}`);
    assert.equal(
      rls.requests.map((r) => ({ domain: r.domain, descriptors: r.descriptors.map((d) => d.entries) })),
      [
        {
          domain: 'edge',
          descriptors: [
            [
              { key: 'vhost', value: 'global' },
              { key: 'remote_address', value: '127.0.0.1' },
            ],
          ],
        },
      ],
      `Envoy ${v}: the virtual host's descriptor`,
    );
    rls.requests.length = 0;
    assert.is((await get(p, '/api', { headers: { 'x-api-key': 'fresh' } })).status, 200);
    assert.equal(
      rls.requests[0]?.descriptors.map((d) => d.entries),
      [[{ key: 'api_key', value: 'fresh' }]],
    );
    const spent = await get(p, '/api', { headers: { 'x-api-key': 'spent' } });
    assert.is(spent.status, 429, `Envoy ${v}: over the limit`);
  }
});

test('global, service down: failOpen (the default) lets requests through, failOpen: false refuses them', async () => {
  for (const v of ENVOY_VERSIONS) {
    assert.is((await get(byRelease.get(v)!.downOpen, '/page')).status, 200, `Envoy ${v}: open`);
    assert.is((await get(byRelease.get(v)!.downClosed, '/page')).status, 500, `Envoy ${v}: closed`);
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
