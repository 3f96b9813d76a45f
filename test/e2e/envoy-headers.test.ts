/**
 * Header edits through real Envoy 1.40 and 1.36, at the listener (route configuration), virtual
 * host and route levels: a backend that reflects the request headers it got shows what was set,
 * added and removed; the client sees the response headers set and not the one removed.
 */
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

let app: RunningApp;
let backend: http.Server;
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, number>();

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; seen: Record<string, string>; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          seen: body ? (JSON.parse(body) as Record<string, string>) : {},
          headers: res.headers,
        }),
      );
    });
    req.on('error', reject);
  });
}

test.before(async () => {
  try {
    // Reflects the request headers; sends one response header of its own a route removes.
    backend = http.createServer((req, res) => {
      res.setHeader('x-backend-detail', 'internal');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.headers));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const port = (backend.address() as { port: number }).port;
    const docs = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${port} }]\n`,
      `kind: VirtualHost
name: site
domains: ["*"]
headers:
  request:
    add: { x-client-address: '%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%' }
routes:
  - match: { prefix: /api }
    to: web
    headers:
      request:
        set: { x-api: v1, x-percent: '100%%' }
      response:
        remove: [x-backend-detail]
  - to: web
`,
    ];
    const releases = await perRelease(freePort, (_v, p, g) => [
      siteListenerYaml(
        g,
        g,
        p,
        "headers:\n  request: { remove: [x-internal-token] }\n  response: { set: { x-served-by: 'fleetxds edge' } }\n",
      ),
    ]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'headers.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(...(await startEnvoys(app, (v) => get(ports.get(v)!, '/').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  backend?.close();
});

test('set, add and remove at every level reach the backend and the client as configured', async () => {
  for (const v of ENVOY_VERSIONS) {
    const r = await get(ports.get(v)!, '/api/x', { 'x-internal-token': 'secret', 'x-api': 'v0' });
    assert.is(r.status, 200);
    assert.is(r.seen['x-api'], 'v1', `Envoy ${v}: set replaces what the client sent`);
    assert.is(r.seen['x-percent'], '100%', `Envoy ${v}: %% is a literal %`);
    assert.is(r.seen['x-client-address'], '127.0.0.1', `Envoy ${v}: the virtual host's operator value`);
    assert.not.ok('x-internal-token' in r.seen, `Envoy ${v}: removed at the listener`);
    assert.is(r.headers['x-served-by'], 'fleetxds edge');
    assert.is(r.headers['x-backend-detail'], undefined, `Envoy ${v}: removed from the /api response`);
    const other = await get(ports.get(v)!, '/other', { 'x-internal-token': 'secret' });
    assert.is(other.seen['x-api'], undefined, `Envoy ${v}: the route's edits stay on that route`);
    assert.is(other.headers['x-backend-detail'], 'internal');
    assert.not.ok('x-internal-token' in other.seen);
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
