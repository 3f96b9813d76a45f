/**
 * Header edits through real Envoy 1.40 and 1.36, at the listener (route configuration), virtual
 * host and route levels: a backend that reflects the request headers it got shows what was set,
 * added and removed; the client sees the response headers set and not the one removed.
 */
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { envoyBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { ENVOY_VERSIONS, freePort, startEnvoy, type EnvoyProcess } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

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
    for (const v of ENVOY_VERSIONS) {
      const p = await freePort();
      ports.set(v, p);
      const g = `g${v.replace('.', '')}`;
      docs.push(
        `kind: NodeGroup\nname: ${g}\nmatch: { idPattern: "${g}-*" }\n`,
        `kind: Listener\nname: ${g}\naddress: 127.0.0.1\nport: ${p}\ngroups: [${g}]\nvirtualHosts: [site]\n` +
          "headers:\n  request: { remove: [x-internal-token] }\n  response: { set: { x-served-by: 'fleetxds edge' } }\n",
      );
    }
    app = await startServer(writeTree({ 'headers.yaml': docs.join('---\n') }));
    const root = tempDir();
    for (const v of ENVOY_VERSIONS) {
      const g = `g${v.replace('.', '')}`;
      const bootstrap = envoyBootstrap({
        mode: 'ads',
        nodeId: `${g}-1`,
        nodeCluster: g,
        server: { host: '127.0.0.1', port: app.grpcPort },
      });
      envoys.push(await startEnvoy(v, bootstrap, root));
      await waitFor(`Envoy ${v} routes`, () => get(ports.get(v)!, '/').then((r) => r.status === 200), 20_000);
    }
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  for (const e of envoys) await e.stop();
  await app?.close();
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
