/**
 * Affinity through real Envoy 1.40 and 1.36, three backends behind ring_hash (and maglev): 100
 * requests with the same header land on one backend while different headers spread; with a cookie
 * policy Envoy sets the cookie on a first request (with its ttl) and requests carrying it stay on
 * one backend; with a source address policy, the connection's address decides, whatever address
 * x-forwarded-for claims.
 */
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { reportSetupFailure, startHttpBackend, type Backend } from '../helpers/envoy-lab.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

let app: RunningApp;
const backends: Backend[] = [];
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, number>();

function get(port: number, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ body: string; cookie?: string }>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ body, cookie: res.headers['set-cookie']?.[0] }));
      })
      .on('error', reject);
  });
}

test.before(async () => {
  try {
    for (const name of ['A', 'B', 'C']) backends.push(await startHttpBackend(name));
    const endpoints = backends.map((b) => `{ address: 127.0.0.1:${b.port} }`).join(', ');
    const docs = [
      `kind: Service\nname: cart\nlb: ring_hash\nendpoints: [${endpoints}]\n`,
      `kind: Service\nname: search\nlb: maglev\nendpoints: [${endpoints}]\n`,
      `kind: VirtualHost
name: site
domains: ["*"]
routes:
  - { match: { prefix: /cart }, to: cart, hashPolicy: [{ cookie: { name: cart-affinity, ttl: 1h, path: / } }] }
  - { match: { prefix: /search }, to: search, hashPolicy: [{ header: x-user }] }
  - { match: { prefix: /by-address }, to: search, hashPolicy: [{ sourceIp: true }] }
  - { to: cart, hashPolicy: [{ header: x-user }] }
`,
    ];
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'affinity.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(
      ...(await startEnvoys(app, (v) =>
        get(ports.get(v)!, '/x', { 'x-user': 'u' }).then((r) => ['A', 'B', 'C'].includes(r.body)),
      )),
    );
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  for (const b of backends) b.server.close();
});

test('the same header lands on one backend (ring_hash and maglev); different headers spread', async () => {
  for (const v of ENVOY_VERSIONS) {
    for (const path of ['/x', '/search']) {
      const same = new Set<string>();
      for (let i = 0; i < 100; i++) same.add((await get(ports.get(v)!, path, { 'x-user': 'alice' })).body);
      assert.is(same.size, 1, `Envoy ${v} ${path}: 100 requests of one user on ${[...same].join(', ')}`);
      const spread = new Set<string>();
      for (let i = 0; i < 60; i++) spread.add((await get(ports.get(v)!, path, { 'x-user': `user-${i}` })).body);
      assert.ok(spread.size >= 2, `Envoy ${v} ${path}: 60 users on ${[...spread].join(', ')}`);
    }
  }
});

test('a cookie policy: Envoy sets the cookie, and requests carrying it stay on one backend', async () => {
  for (const v of ENVOY_VERSIONS) {
    const first = await get(ports.get(v)!, '/cart');
    assert.match(first.cookie ?? '', /^cart-affinity=[^;]+; Max-Age=3600; Path=\//, `Envoy ${v}: ${first.cookie}`);
    const cookie = first.cookie!.split(';')[0]!;
    const seen = new Set<string>([first.body]);
    for (let i = 0; i < 30; i++) seen.add((await get(ports.get(v)!, '/cart', { cookie })).body);
    assert.is(seen.size, 1, `Envoy ${v}: with the cookie, one backend (${[...seen].join(', ')})`);
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test('hashing by source address: the connection decides, not a claimed x-forwarded-for', async () => {
  for (const v of ENVOY_VERSIONS) {
    const landed = new Set<string>();
    for (let i = 0; i < 60; i++)
      landed.add((await get(ports.get(v)!, '/by-address', { 'x-forwarded-for': `203.0.113.${i}` })).body);
    assert.is(landed.size, 1, `Envoy ${v}: 60 claimed addresses from one client on ${[...landed].join(', ')}`);
  }
});

test.run();
