/**
 * Fault injection (`fault` on a VirtualHost or route) through real Envoy 1.40 and 1.36: an abort of
 * every request answers its status without reaching the backend; an abort of half answers about
 * half; a delay holds every request for its time; a route's `fault: false` is untouched under its
 * virtual host's faults; a gRPC abort answers with its grpc-status; a client's fault headers are
 * ignored except on a route whose fault is header-controlled. Changing a fault changes only the
 * route configuration: the listener is not replaced (no drain), and a connection opened before the
 * change sees the new fault.
 */
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { groupOf, listenOn, perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';
import { Agent, request } from 'node:http';

let app: RunningApp;
let tree: string;
let docs: (abortStatus: number) => string[];
const envoys: EnvoyProcess[] = [];
const ports = new Map<EnvoyVersion, number>();
const servers: Server[] = [];
let reached = 0;

test.before(async () => {
  try {
    const backend = await listenOn(
      createServer((req, res) => {
        reached++;
        req.resume();
        res.end('backend');
      }),
      servers,
    );
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    docs = (abortStatus) => [
      `kind: Service\nname: api\nendpoints: [{ address: 127.0.0.1:${backend} }]\n`,
      `kind: VirtualHost
name: site
domains: ["*"]
fault: { delay: { fixed: 300ms, percent: 100 } }
routes:
  - { match: { prefix: /down }, to: api, fault: { abort: { status: ${abortStatus}, percent: 100 } } }
  - { match: { prefix: /flaky }, to: api, fault: { abort: { status: 500, percent: 50 } } }
  - { match: { prefix: /fine }, to: api, fault: false }
  - { match: { prefix: /grpc-down }, to: api, fault: { abort: { grpcStatus: unavailable, percent: 100 } } }
  - { match: { prefix: /ask }, to: api, fault: { headerControlled: true } }
  - { to: api }
`,
      ...releases.docs,
    ];
    tree = writeTree({ 'fault.yaml': docs(503).join('---\n') });
    app = await startServer(tree);
    envoys.push(...(await startEnvoys(app, (v) => httpGet(ports.get(v)!, '/fine').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  for (const s of servers) s.close();
});

test('an abort of every request answers its status, and the backend sees none of them', async () => {
  for (const v of ENVOY_VERSIONS) {
    const before = reached;
    for (let i = 0; i < 20; i++) assert.is((await httpGet(ports.get(v)!, '/down')).status, 503, `Envoy ${v}`);
    assert.is(reached, before, `Envoy ${v}: the backend was reached`);
  }
});

test('an abort of half the requests answers about half of 1,000', async () => {
  for (const v of ENVOY_VERSIONS) {
    let failed = 0;
    for (let i = 0; i < 1000; i++) if ((await httpGet(ports.get(v)!, '/flaky')).status === 500) failed++;
    // 1,000 draws at 1/2: the standard deviation is about 16; 400-600 is more than six of them.
    assert.ok(failed >= 400 && failed <= 600, `Envoy ${v}: ${failed} of 1000 failed`);
  }
});

test("the virtual host's delay holds its requests; a route's `fault: false` is untouched", async () => {
  for (const v of ENVOY_VERSIONS) {
    const timed = async (path: string) => {
      const t0 = performance.now();
      const r = await httpGet(ports.get(v)!, path);
      assert.is(r.status, 200, `Envoy ${v} ${path}`);
      return performance.now() - t0;
    };
    for (let i = 0; i < 3; i++) {
      assert.ok((await timed('/')) >= 290, `Envoy ${v}: / was not delayed`);
      assert.ok((await timed('/fine')) < 250, `Envoy ${v}: /fine was delayed`);
    }
  }
});

test("a client cannot ask for a fault: Envoy's fault headers are ignored", async () => {
  for (const v of ENVOY_VERSIONS) {
    const r = await fetch(`http://127.0.0.1:${ports.get(v)!}/fine`, {
      headers: {
        'x-envoy-fault-abort-request': '500',
        'x-envoy-fault-abort-request-percentage': '100',
        'x-envoy-fault-delay-request': '2000',
      },
    });
    assert.is(r.status, 200, `Envoy ${v}`);
    assert.is(await r.text(), 'backend');
  }
});

test('a gRPC abort answers a gRPC request with its grpc-status; a header-controlled route takes the fault asked', async () => {
  for (const v of ENVOY_VERSIONS) {
    const port = ports.get(v)!;
    const grpcReq = await fetch(`http://127.0.0.1:${port}/grpc-down/x.Greeter/Hello`, {
      method: 'POST',
      headers: { 'content-type': 'application/grpc' },
      body: new Uint8Array(5),
    });
    assert.is(grpcReq.status, 200, `Envoy ${v}`);
    assert.is(grpcReq.headers.get('grpc-status'), '14', `Envoy ${v}`);
    const asked = await fetch(`http://127.0.0.1:${port}/ask`, {
      headers: { 'x-envoy-fault-abort-request': '418' },
    });
    assert.is(asked.status, 418, `Envoy ${v}`);
    // The share asked for is in percent: 50% of 200 requests fail, give or take.
    let half = 0;
    for (let i = 0; i < 200; i++) {
      const r = await fetch(`http://127.0.0.1:${port}/ask`, {
        headers: { 'x-envoy-fault-abort-request': '418', 'x-envoy-fault-abort-request-percentage': '50' },
      });
      await r.arrayBuffer();
      if (r.status === 418) half++;
    }
    assert.ok(half >= 60 && half <= 140, `Envoy ${v}: ${half} of 200 aborted at 50%`);
    const t0 = performance.now();
    const delayed = await fetch(`http://127.0.0.1:${port}/ask`, { headers: { 'x-envoy-fault-delay-request': '300' } });
    assert.is(delayed.status, 200, `Envoy ${v}`);
    assert.ok(performance.now() - t0 >= 290, `Envoy ${v}: the asked delay`);
    assert.is((await fetch(`http://127.0.0.1:${port}/ask`)).status, 200, `Envoy ${v}: nothing asked`);
  }
});

/** One request on `agent`'s kept-alive connection; the local port says which connection it was. */
function onConnection(agent: Agent, port: number, path: string): Promise<{ status: number; localPort: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, localPort: req.socket!.localPort! }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a changed fault is a route change: no listener is replaced, and an open connection sees it', async () => {
  const agents = new Map(ENVOY_VERSIONS.map((v) => [v, new Agent({ keepAlive: true, maxSockets: 1 })]));
  const before = new Map<EnvoyVersion, { localPort: number; modified: number }>();
  for (const [i, v] of ENVOY_VERSIONS.entries()) {
    const first = await onConnection(agents.get(v)!, ports.get(v)!, '/down');
    assert.is(first.status, 503);
    const stats = await envoys[i]!.stats('listener_manager.listener_(modified|removed)');
    before.set(v, { localPort: first.localPort, modified: Number(stats['listener_manager.listener_modified']) });
  }
  writeTree({ 'fault.yaml': docs(429).join('---\n') }, tree);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
  for (const [i, v] of ENVOY_VERSIONS.entries()) {
    await waitFor(`Envoy ${v} answers 429`, async () => (await httpGet(ports.get(v)!, '/down')).status === 429, 10_000);
    const again = await onConnection(agents.get(v)!, ports.get(v)!, '/down');
    assert.equal(again, { status: 429, localPort: before.get(v)!.localPort }, `Envoy ${v} (${groupOf(v)})`);
    const stats = await envoys[i]!.stats('listener_manager.listener_(modified|removed)');
    assert.is(Number(stats['listener_manager.listener_modified']), before.get(v)!.modified, `Envoy ${v}`);
  }
  for (const a of agents.values()) a.destroy();
});

test.run();
