/**
 * Access control and upstream identity through real Envoy 1.40 and 1.36 (one Envoy each):
 *  - client addresses: a listener denies 127.0.0.2 (403) and not 127.0.0.1; a route that allows
 *    only 127.0.0.3 refuses 127.0.0.1; a health route turns access off; a shadow rule lets the
 *    denied client through and counts it (rbac.shadow_denied); an x-forwarded-for header does not
 *    change the address rules see, except on a listener that trusts a proxy in front;
 *  - client certificate names on an mTLS listener: the right SAN gets 200, the wrong one 403;
 *  - a TCP listener that denies 127.0.0.2 closes its connection and echoes for 127.0.0.1;
 *  - upstream identity: a service whose certificate carries the SAN answers; one that must carry
 *    another name fails the TLS handshake (503, an SSL failure reason in the access log).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { makePki, type Pki } from '../helpers/certs.ts';
import { ENVOY_VERSIONS, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { freePorts, groupOf, listenOn, perRelease, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

interface Ports {
  site: number;
  forwarded: number;
  mtls: number;
  tcp: number;
  upstream: number;
}

let app: RunningApp;
let pki: Pki;
let logDir: string;
let tree: string;
let treeText: string;
const clients: Record<'good' | 'bad', { cert: string; key: string }> = {} as never;
const servers: net.Server[] = [];
const listen = (server: net.Server, host?: string) => listenOn(server, servers, host);
const envoys: EnvoyProcess[] = [];
const byRelease = new Map<EnvoyVersion, Ports>();

function get(
  port: number,
  path: string,
  opts: { from?: string; tls?: { cert: string; key: string }; forwardedFor?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = opts.forwardedFor ? { 'x-forwarded-for': opts.forwardedFor } : {};
    const base = { host: '127.0.0.1', port, path, agent: false as const, localAddress: opts.from, headers };
    const done = (res: http.IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    };
    const req = opts.tls
      ? https.get(
          {
            ...base,
            ca: pki.caPem,
            servername: 'site.test',
            cert: readFileSync(opts.tls.cert),
            key: readFileSync(opts.tls.key),
          },
          done,
        )
      : http.get(base, done);
    req.on('error', reject);
  });
}

/** Sends a line over TCP from `from`; what comes back, or "closed". */
function echo(port: number, from: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: from });
    let got = '';
    s.setEncoding('utf8');
    s.on('connect', () => s.write('ping\n'));
    s.on('data', (d: string) => {
      got += d;
      if (got.includes('\n')) {
        s.destroy();
        resolve(got.trim());
      }
    });
    s.on('close', () => resolve(got ? got.trim() : 'closed'));
    s.on('error', () => undefined);
  });
}

test.before(async () => {
  try {
    const dir = tempDir();
    logDir = tempDir();
    pki = makePki(dir);
    const site = pki.issue('site', 'DNS:site.test');
    const good = pki.issue('good-client', 'URI:spiffe://test/good/a');
    const bad = pki.issue('bad-client', 'URI:spiffe://test/bad/b');
    const upstreamCert = pki.issue('upstream', 'DNS:backend.internal');
    Object.assign(clients, { good, bad });
    const web = await listen(http.createServer((_q, s) => s.end('web')));
    const secure = await listen(
      https.createServer({ cert: upstreamCert.certPem, key: upstreamCert.keyPem }, (_q, s) => s.end('secure')),
    );
    const tcp = await listen(net.createServer((s) => s.on('data', (d) => s.write(`echo:${d.toString()}`))));
    const caFile = join(dir, 'ca.crt');
    const docs = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${web} }]\n`,
      `kind: Service\nname: tcp-echo\nendpoints: [{ address: 127.0.0.1:${tcp} }]\n`,
      `kind: Service
name: secure-right
endpoints: [{ address: 127.0.0.1:${secure} }]
tls: { caFile: ${caFile}, sni: backend.internal, subjectAltNames: [{ type: dns, exact: backend.internal }] }
`,
      `kind: Service
name: secure-wrong
endpoints: [{ address: 127.0.0.1:${secure} }]
tls: { caFile: ${caFile}, sni: backend.internal, subjectAltNames: [{ type: dns, suffix: .payments.internal }] }
`,
      `kind: Secret\nname: site-cert\ncertificateFile: ${site.cert}\nprivateKeyFile: ${site.key}\n`,
      `kind: Secret\nname: clients\ncaFile: ${pki.caCert}\n`,
      `kind: VirtualHost
name: acc
domains: ["*"]
routes:
  - match: { prefix: /healthz }
    to: web
    access: false
  - match: { prefix: /only-3 }
    to: web
    access: { allow: [127.0.0.3] }
  - match: { prefix: /shadow }
    to: web
    access: { deny: [127.0.0.2/32], mode: shadow }
  - to: web
`,
      `kind: VirtualHost
name: names
domains: ["*"]
routes: [{ to: web }]
`,
      `kind: VirtualHost
name: upstreams
domains: ["*"]
routes:
  - { match: { prefix: /right }, to: secure-right }
  - { match: { prefix: /wrong }, to: secure-wrong }
`,
    ];
    const releases = await perRelease(freePorts('site', 'forwarded', 'mtls', 'tcp', 'upstream'), (_v, p, g) => [
      `kind: Listener
name: fwd-${g}
address: 127.0.0.1
port: ${p.forwarded}
groups: [${g}]
http: { xffNumTrustedHops: 1 }
virtualHosts: [acc]
access: { deny: [127.0.0.2] }
`,
      `kind: Listener
name: acc-${g}
address: 127.0.0.1
port: ${p.site}
groups: [${g}]
virtualHosts: [acc]
access: { deny: [127.0.0.2] }
`,
      `kind: Listener
name: names-${g}
address: 127.0.0.1
port: ${p.mtls}
groups: [${g}]
virtualHosts: [names]
tls: { secret: site-cert, clientCa: clients }
access: { clientNames: [{ prefix: "spiffe://test/good/" }] }
`,
      `kind: Listener
name: tcp-${g}
address: 127.0.0.1
port: ${p.tcp}
groups: [${g}]
tcp: { to: tcp-echo }
access: { deny: [127.0.0.2] }
`,
      `kind: Listener
name: up-${g}
address: 127.0.0.1
port: ${p.upstream}
groups: [${g}]
virtualHosts: [upstreams]
accessLog: [{ to: ${join(logDir, `${g}.log`)}, fields: { status: '%RESPONSE_CODE%', reason: '%UPSTREAM_TRANSPORT_FAILURE_REASON%' } }]
`,
    ]);
    for (const [v, p] of releases.ports) byRelease.set(v, p);
    treeText = [...docs, ...releases.docs].join('---\n');
    tree = writeTree({ 'access.yaml': treeText });
    // The CA file Envoy reads to verify the upstream.
    writeFileSync(caFile, pki.caPem);
    app = await startServer(tree, { watch: true });
    envoys.push(...(await startEnvoys(app, (v) => get(byRelease.get(v)!.site, '/').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  for (const s of servers) s.close();
});

test('a denied client address gets 403, others pass; a route can allow only some, or turn access off', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.site;
    assert.is((await get(p, '/x', { from: '127.0.0.1' })).status, 200, `Envoy ${v}: 127.0.0.1`);
    const denied = await get(p, '/x', { from: '127.0.0.2' });
    assert.is(denied.status, 403, `Envoy ${v}: 127.0.0.2 is denied`);
    assert.match(denied.body, /RBAC/);
    assert.is((await get(p, '/healthz', { from: '127.0.0.2' })).status, 200, `Envoy ${v}: access off for health`);
    assert.is((await get(p, '/only-3', { from: '127.0.0.1' })).status, 403, `Envoy ${v}: only 127.0.0.3`);
    assert.is((await get(p, '/only-3', { from: '127.0.0.3' })).status, 200);
  }
});

test('address rules match the connection, not what x-forwarded-for claims, unless hops are trusted', async () => {
  for (const v of ENVOY_VERSIONS) {
    const { site, forwarded } = byRelease.get(v)!;
    const spoofed = await get(site, '/x', { from: '127.0.0.2', forwardedFor: '10.9.9.9' });
    assert.is(spoofed.status, 403, `Envoy ${v}: a claimed address does not lift a deny rule`);
    const claimed = await get(site, '/only-3', { from: '127.0.0.1', forwardedFor: '127.0.0.3' });
    assert.is(claimed.status, 403, `Envoy ${v}: a claimed address does not meet an allow rule`);
    // With one trusted proxy in front, the client is the entry that proxy appended before it.
    const behind = (client: string) => get(forwarded, '/x', { from: '127.0.0.1', forwardedFor: `${client}, 10.1.1.1` });
    assert.is((await behind('127.0.0.2')).status, 403, `Envoy ${v}: the forwarded client is denied`);
    assert.is((await behind('127.0.0.5')).status, 200, `Envoy ${v}: another forwarded client passes`);
  }
});

test('shadow mode lets the client through and counts what it would refuse', async () => {
  for (const [i, v] of ENVOY_VERSIONS.entries()) {
    const p = byRelease.get(v)!.site;
    const stat = `http.acc-${groupOf(v)}.rbac.shadow_denied`;
    const before = Number((await envoys[i]!.stats('rbac.shadow_denied'))[stat] ?? 0);
    assert.is((await get(p, '/shadow', { from: '127.0.0.2' })).status, 200, `Envoy ${v}: shadow lets it through`);
    const stats = await envoys[i]!.stats('rbac.shadow_denied');
    const after = Number(stats[stat]);
    assert.is(after, before + 1, `Envoy ${v}: counted once: ${JSON.stringify(stats)}`);
  }
});

test('on an mTLS listener, a client certificate without an allowed name gets 403', async () => {
  const { good, bad } = clients;
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.mtls;
    assert.is((await get(p, '/', { tls: good })).status, 200, `Envoy ${v}: spiffe://test/good/a`);
    assert.is((await get(p, '/', { tls: bad })).status, 403, `Envoy ${v}: spiffe://test/bad/b`);
  }
});

test('a TCP listener closes a denied client and proxies the others', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.tcp;
    assert.is(await echo(p, '127.0.0.1'), 'echo:ping', `Envoy ${v}`);
    assert.is(await echo(p, '127.0.0.2'), 'closed', `Envoy ${v}: 127.0.0.2 is closed`);
  }
});

test('an upstream whose certificate lacks the required name fails the handshake; the right one answers', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.upstream;
    const right = await get(p, '/right');
    assert.is(right.status, 200, `Envoy ${v}: ${right.body}`);
    assert.is(right.body, 'secure');
    assert.is((await get(p, '/wrong')).status, 503, `Envoy ${v}: the SAN check fails`);
    const log = join(logDir, `${groupOf(v)}.log`);
    await waitFor(
      `Envoy ${v} logs the failure`,
      () => /SAN|CERTIFICATE_VERIFY_FAILED|verify/i.test(readSafe(log)),
      20_000,
    );
  }
});

test('a new deny rule applies to connections already open (it travels in the route configuration)', async () => {
  const agents = new Map(ENVOY_VERSIONS.map((v) => [v, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
  const onKept = (v: EnvoyVersion) =>
    new Promise<number>((resolve, reject) => {
      const req = http.get(
        {
          host: '127.0.0.1',
          port: byRelease.get(v)!.site,
          path: '/x',
          agent: agents.get(v),
          localAddress: '127.0.0.4',
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
    });
  const sockets = new Set<net.Socket>();
  for (const v of ENVOY_VERSIONS) {
    assert.is(await onKept(v), 200, `Envoy ${v}: 127.0.0.4 is not denied yet`);
    for (const list of Object.values(agents.get(v)!.freeSockets)) for (const s of list ?? []) sockets.add(s);
  }
  writeFileSync(
    join(tree, 'access.yaml'),
    treeText.replaceAll('deny: [127.0.0.2] }', 'deny: [127.0.0.2, 127.0.0.4] }'),
  );
  for (const v of ENVOY_VERSIONS)
    await waitFor(`Envoy ${v} refuses 127.0.0.4`, async () => (await onKept(v)) === 403, 20_000);
  const now = new Set<net.Socket>();
  for (const v of ENVOY_VERSIONS)
    for (const list of Object.values(agents.get(v)!.freeSockets)) for (const s of list ?? []) now.add(s);
  assert.equal([...now].filter((s) => !sockets.has(s)).length, 0, 'the same connections were refused');
  for (const a of agents.values()) a.destroy();
  writeFileSync(join(tree, 'access.yaml'), treeText);
  for (const v of ENVOY_VERSIONS)
    await waitFor(
      `Envoy ${v} lets 127.0.0.4 through again`,
      async () => (await get(byRelease.get(v)!.site, '/x', { from: '127.0.0.4' })).status === 200,
      20_000,
    );
});

function readSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

test.run();
