/**
 * Access logs through real Envoy 1.40 and 1.36: one request writes one JSON line naming its route
 * and upstream host; a request to a dead upstream logs its response flag; a status filter writes
 * only the matching lines; a TCP listener logs each connection with its upstream host; both also
 * reach Envoy's gRPC access log service (a server in the test), structured.
 */
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure, startHttpBackend, type Backend } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startAccessLogServer, type AccessLogEntry, type GrpcTestServer } from '../helpers/envoy-services.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const logs = tempDir();
let app: RunningApp;
let web: Backend;
let als: GrpcTestServer & { entries: AccessLogEntry[] };
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, { http: number; tcp: number }>();
const file = (v: string, what: string) => join(logs, `${v}-${what}.log`);
const lines = (path: string): string[] =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l.length > 0)
    : [];

test.before(async () => {
  try {
    web = await startHttpBackend('A');
    als = await startAccessLogServer();
    const dead = await freePort(); // nothing listens there
    const docs = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${web.port} }]\n`,
      `kind: Service\nname: dead\nconnectTimeout: 1s\nendpoints: [{ address: 127.0.0.1:${dead} }]\n`,
      `kind: Service\nname: als\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${als.port} }]\n`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes:\n' +
        '  - { name: ok, match: { prefix: /ok }, to: web }\n' +
        '  - { name: dead, match: { prefix: /dead }, to: dead }\n',
    ];
    const releases = await perRelease(
      async () => ({ http: await freePort(), tcp: await freePort() }),
      (v, p, g) => [
        siteListenerYaml(
          `${g}-http`,
          g,
          p.http,
          `accessLog:\n  - to: ${file(v, 'all')}\n` +
            `  - { to: ${file(v, 'errors')}, format: text, text: '%RESPONSE_CODE% %RESPONSE_FLAGS% %ROUTE_NAME%', ` +
            'filter: { status: { min: 500 } } }\n' +
            `  - to: { service: als, logName: ${g}-http }\n`,
        ),
        `kind: Listener\nname: ${g}-tcp\naddress: 127.0.0.1\nport: ${p.tcp}\ngroups: [${g}]\ntcp: { to: web }\n` +
          `accessLog:\n  - to: ${file(v, 'tcp')}\n  - to: { service: als }\n`,
      ],
    );
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'logs.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(
      ...(await startEnvoys(app, (v) => httpGet(ports.get(v)!.http, '/ok/warm').then((r) => r.status === 200))),
    );
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  web?.server.close();
  await als?.close();
});

test('one request, one JSON line with its route and upstream host; a dead upstream logs its flag; the filter keeps errors', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = ports.get(v)!;
    assert.is((await httpGet(p.http, '/ok/one')).status, 200);
    assert.is((await httpGet(p.http, '/dead/one')).status, 503);
    await waitFor(`Envoy ${v}: both logged`, () => lines(file(v, 'all')).length >= 3, 20_000);
    const all = lines(file(v, 'all')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const ok = all.filter((e) => e.path === '/ok/one');
    assert.is(ok.length, 1, `Envoy ${v}: one line for one request`);
    assert.is(ok[0]!.route_name, 'ok');
    assert.is(ok[0]!.upstream_host, `127.0.0.1:${web.port}`);
    assert.is(Number(ok[0]!.status), 200);
    const dead = all.find((e) => e.path === '/dead/one')!;
    assert.is(Number(dead.status), 503);
    assert.match(String(dead.response_flags), /UF|URX/, `Envoy ${v}: ${dead.response_flags}`);
    await waitFor(`Envoy ${v}: the error logged`, () => lines(file(v, 'errors')).length >= 1, 20_000);
    const errors = lines(file(v, 'errors'));
    assert.ok(
      errors.every((l) => /^5\d\d /.test(l)),
      `Envoy ${v}: only 5xx lines: ${errors.join(' | ')}`,
    );
    assert.ok(
      errors.some((l) => /^503 \S*(UF|URX)\S* dead$/.test(l)),
      errors.join(' | '),
    );
  }
});

test('a TCP connection is logged with its upstream host', async () => {
  for (const v of ENVOY_VERSIONS) {
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(ports.get(v)!.tcp, '127.0.0.1', () => s.write('GET / HTTP/1.0\r\nHost: x\r\n\r\n'));
      let got = '';
      s.setEncoding('utf8').on('data', (d: string) => (got += d));
      s.on('end', () => resolve(got));
      s.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.[01] 200/);
    await waitFor(`Envoy ${v}: the connection logged`, () => lines(file(v, 'tcp')).length >= 1, 20_000);
    const entry = JSON.parse(lines(file(v, 'tcp'))[0]!) as Record<string, unknown>;
    assert.is(entry.upstream_host, `127.0.0.1:${web.port}`);
    assert.is(entry.upstream_cluster, 'web');
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test("the gRPC access log service gets each request and connection, under the log's name", async () => {
  for (const v of ENVOY_VERSIONS) {
    const g = `g${v.replace('.', '')}`;
    assert.is((await httpGet(ports.get(v)!.http, '/ok/grpc-logged')).status, 200);
    await waitFor(
      `Envoy ${v}: the request reaches the log service`,
      async () => als.entries.some((e) => e.request?.path === '/ok/grpc-logged' && e.logName === `${g}-http`),
      20_000,
    );
    const entry = als.entries.find((e) => e.request?.path === '/ok/grpc-logged' && e.logName === `${g}-http`)!;
    assert.is(entry.kind, 'http');
    const code = entry.response?.response_code;
    assert.is(typeof code === 'object' ? code.value : code, 200, `Envoy ${v}`);
    assert.is(entry.common_properties?.upstream_cluster, 'web');
    await waitFor(
      `Envoy ${v}: a TCP connection reaches the log service`,
      async () => als.entries.some((e) => e.kind === 'tcp' && e.logName === `${g}-tcp`),
      20_000,
    );
  }
});

test.run();
