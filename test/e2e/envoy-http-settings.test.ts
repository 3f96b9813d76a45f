/**
 * Connection-manager settings through real Envoy 1.40 and 1.36: with useRemoteAddress the backend
 * sees the client's address appended to x-forwarded-for (without it, what the client claimed is
 * all it gets); a request whose headers stall is cut at requestHeadersTimeout; serverName is the
 * server header the client sees.
 */
import http from 'node:http';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

const LOCAL_ADDRESSES = new Set(
  Object.values(networkInterfaces())
    .flat()
    .map((i) => i!.address),
);

let app: RunningApp;
let backend: http.Server;
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, { edge: number; plain: number }>();

function get(port: number, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; seen: Record<string, string>; server?: string | string[] }>(
    (resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/', headers, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            seen: body ? (JSON.parse(body) as Record<string, string>) : {},
            server: res.headers.server,
          }),
        );
      });
      req.on('error', reject);
    },
  );
}

test.before(async () => {
  try {
    backend = http.createServer((req, res) => res.end(JSON.stringify(req.headers)));
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const docs = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${(backend.address() as net.AddressInfo).port} }]\n`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ to: web }]\n',
    ];
    const releases = await perRelease(
      async () => ({ edge: await freePort(), plain: await freePort() }),
      (_v, p, g) => [
        siteListenerYaml(
          `${g}-edge`,
          g,
          p.edge,
          'http: { useRemoteAddress: true, requestHeadersTimeout: 1s, serverName: fleetxds-edge }\n',
        ),
        siteListenerYaml(`${g}-plain`, g, p.plain),
      ],
    );
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'http.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(
      ...(await startEnvoys(
        app,
        async (v) => (await get(ports.get(v)!.edge)).status === 200 && (await get(ports.get(v)!.plain)).status === 200,
      )),
    );
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  backend?.close();
});

test("useRemoteAddress: the backend sees the client's address; serverName is the server header", async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = ports.get(v)!;
    const edge = await get(p.edge, { 'x-forwarded-for': '203.0.113.9' });
    // Envoy appends the connection's address; for a loopback client, this host's own address.
    const [claimed, appended] = edge.seen['x-forwarded-for']!.split(',');
    assert.is(claimed, '203.0.113.9');
    assert.ok(LOCAL_ADDRESSES.has(appended!), `Envoy ${v}: appended ${appended}`);
    assert.is(edge.server, 'fleetxds-edge');
    const plain = await get(p.plain, { 'x-forwarded-for': '203.0.113.9' });
    assert.is(plain.seen['x-forwarded-for'], '203.0.113.9', `Envoy ${v}: without it, only what the client claimed`);
    assert.is(plain.server, 'envoy');
  }
});

test('a request whose headers stall is cut at requestHeadersTimeout', async () => {
  for (const v of ENVOY_VERSIONS) {
    for (const [port, cut] of [
      [ports.get(v)!.edge, true],
      [ports.get(v)!.plain, false],
    ] as const) {
      const started = Date.now();
      const outcome = await new Promise<string>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: x\r\n')); // never ends its headers
        let got = '';
        s.setEncoding('utf8').on('data', (d: string) => (got += d));
        s.on('close', () => resolve(`closed after ${Date.now() - started} ms: ${got.split('\r\n')[0]}`));
        setTimeout(() => {
          s.destroy();
          resolve('still open after 4 s');
        }, 4000);
      });
      if (cut) assert.match(outcome, /^closed after (1\d{3}|2\d{3}) ms/, `Envoy ${v}: ${outcome}`);
      else assert.is(outcome, 'still open after 4 s', `Envoy ${v}: no limit without the setting`);
    }
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
