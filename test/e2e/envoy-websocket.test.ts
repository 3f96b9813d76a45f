/**
 * WebSockets through real Envoy 1.40 and 1.36: on by default (a client's messages echo back), off
 * for a listener (the upgrade is answered 403), and switched per route either way.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket, { WebSocketServer } from 'ws';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

let app: RunningApp;
let echo: WebSocketServer;
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, { on: number; off: number }>();

/** The echo of one message through a WebSocket to `port`, or the HTTP status the upgrade got. */
function exchange(port: number, path: string): Promise<{ echo?: string; status?: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`);
    const timer = setTimeout(() => reject(new Error(`no answer on ${path}`)), 5000);
    ws.on('open', () => ws.send(`hello ${path}`));
    ws.on('message', (m) => {
      clearTimeout(timer);
      resolve({ echo: (m as Buffer).toString() });
      ws.close();
    });
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      resolve({ status: res.statusCode });
      ws.terminate();
    });
    ws.on('error', () => undefined);
  });
}

test.before(async () => {
  try {
    echo = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    echo.on('connection', (s) => s.on('message', (m) => s.send(`echo: ${(m as Buffer).toString()}`)));
    await new Promise<void>((r) => echo.once('listening', () => r()));
    const echoPort = (echo.address() as { port: number }).port;
    const docs = [
      `kind: Service\nname: echo\nendpoints: [{ address: 127.0.0.1:${echoPort} }]\n`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes:\n' +
        '  - { match: { prefix: /ws-off }, to: echo, websocket: false }\n' +
        '  - { match: { prefix: /ws-on }, to: echo, websocket: true }\n' +
        '  - to: echo\n',
    ];
    const releases = await perRelease(
      async () => ({ on: await freePort(), off: await freePort() }),
      (_v, p, g) => [
        siteListenerYaml(`${g}-on`, g, p.on),
        siteListenerYaml(`${g}-off`, g, p.off, 'websocket: false\n'),
      ],
    );
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'ws.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(...(await startEnvoys(app, (v) => httpGet(ports.get(v)!.on, '/').then((r) => r.status === 426))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  echo?.close();
});

test('on by default, off for a listener, and switched per route', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = ports.get(v)!;
    assert.equal(await exchange(p.on, '/chat'), { echo: 'echo: hello /chat' }, `Envoy ${v}: on by default`);
    assert.equal(await exchange(p.on, '/ws-off/chat'), { status: 403 }, `Envoy ${v}: a route turns it off`);
    assert.equal(await exchange(p.off, '/chat'), { status: 403 }, `Envoy ${v}: off for the listener`);
    assert.equal(
      await exchange(p.off, '/ws-on/chat'),
      { echo: 'echo: hello /ws-on/chat' },
      `Envoy ${v}: a route turns it on`,
    );
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
