/**
 * TCP proxying and TLS passthrough through real Envoy 1.40 and 1.36 (one Envoy each, one fleetxds):
 *  - a TCP listener echoes bytes from a backend; an 80/20 split over 1,000 connections lands within
 *    5 points; changing `to` keeps an established connection echoing while new ones go to the new
 *    service;
 *  - on one port, SNI db.example is passed through untouched (the client sees the backend's own
 *    certificate) while www.example is terminated with the certificate fleetxds serves over SDS;
 *    on a port of passthrough names alone, any other name is closed;
 *  - a TCP listener that terminates TLS (certificate over SDS) and proxies the bytes inside;
 *  - a TCP listener whose service is reached over TLS (Service tls: SNI, CA, subject alternative
 *    names): Envoy originates it, and refuses a certificate without the name required.
 */
import { X509Certificate } from 'node:crypto';
import { chmodSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { makePki, type CertFiles } from '../helpers/certs.ts';
import { freePort, ENVOY_VERSIONS, type EnvoyProcess } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { groupOf, nodeGroupYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

interface Ports {
  tcp: number;
  split: number;
  edge: number;
  tlsTcp: number;
  originate: number;
  originateWrong: number;
  sniOnly: number;
}

/** A TCP server answering each line with "<name>:<line>". */
async function echoServer(name: string): Promise<{ port: number; server: net.Server }> {
  const server = net.createServer((s) => {
    s.setEncoding('utf8');
    let buf = '';
    s.on('data', (d: string) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        s.write(`${name}:${buf.slice(0, i)}\n`);
        buf = buf.slice(i + 1);
      }
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, server };
}

/** One line sent, one line back, over a connection that stays open for more. */
class Line {
  private buf = '';
  private waiting?: (line: string) => void;
  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buf += d;
      const i = this.buf.indexOf('\n');
      if (i >= 0 && this.waiting) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.waiting(line);
      }
    });
    socket.on('error', () => undefined);
  }
  static open(port: number): Promise<Line> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(new Line(s)));
      s.once('error', reject);
    });
  }
  ask(text: string, timeoutMs = 3000): Promise<string> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no answer to ${text}`)), timeoutMs);
      this.waiting = (line) => {
        clearTimeout(t);
        resolve(line);
      };
      this.socket.write(`${text}\n`);
    });
  }
  close(): void {
    this.socket.destroy();
  }
}

async function once(port: number, text: string): Promise<string> {
  const l = await Line.open(port);
  try {
    return await l.ask(text);
  } finally {
    l.close();
  }
}

/** The fingerprint of the certificate a TLS connection to `port` with SNI `servername` is shown. */
function certificateSeen(port: number, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      resolve(s.getPeerX509Certificate()!.fingerprint256);
      s.destroy();
    });
    s.once('error', reject);
  });
}

let app: RunningApp;
let dir: string;
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, Ports>();
const backends: Record<string, { port: number; server: net.Server }> = {};
let dbTls: tls.Server;
let secureEcho: tls.Server;
const secureNames: string[] = [];
let www: CertFiles, db: CertFiles, mq: CertFiles;
let caFile: string;

function tree(tcpTo: string): Record<string, string> {
  const svc = (name: string, port: number) =>
    `kind: Service\nname: ${name}\nendpoints: [{ address: 127.0.0.1:${port} }]\n`;
  const docs = [
    svc('a', backends.A!.port),
    svc('b', backends.B!.port),
    svc('db', (dbTls.address() as net.AddressInfo).port),
    svc('secure', (secureEcho.address() as net.AddressInfo).port) +
      `tls: { sni: secure.example, caFile: ${caFile}, subjectAltNames: [{ type: dns, exact: secure.example }] }\n`,
    // The same backend, required to be another name: Envoy must refuse its certificate.
    svc('secure-other', (secureEcho.address() as net.AddressInfo).port) +
      `tls: { sni: secure.example, caFile: ${caFile}, subjectAltNames: [{ type: dns, exact: other.example }] }\n`,
    'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ directResponse: { status: 200, body: www } }]\n',
    `kind: Secret\nname: www\ncertificateFile: ${www.cert}\nprivateKeyFile: ${www.key}\n`,
    `kind: Secret\nname: mq\ncertificateFile: ${mq.cert}\nprivateKeyFile: ${mq.key}\n`,
  ];
  for (const v of ENVOY_VERSIONS) {
    const p = ports.get(v)!;
    const g = groupOf(v);
    docs.push(
      nodeGroupYaml(v),
      `kind: Listener\nname: ${g}-tcp\naddress: 127.0.0.1\nport: ${p.tcp}\ngroups: [${g}]\ntcp: { to: ${tcpTo}, idleTimeout: 1h }\n`,
      `kind: Listener\nname: ${g}-split\naddress: 127.0.0.1\nport: ${p.split}\ngroups: [${g}]\n` +
        'tcp: { split: [{ service: a, weight: 80 }, { service: b, weight: 20 }], maxConnectAttempts: 2 }\n',
      `kind: Listener\nname: ${g}-edge\naddress: 127.0.0.1\nport: ${p.edge}\ngroups: [${g}]\nvirtualHosts: [site]\n` +
        'tls: { secret: www, sni: [{ serverNames: [www.example], secret: www }] }\n' +
        'passthrough: [{ serverNames: [db.example], to: db }]\n',
      `kind: Listener\nname: ${g}-tls-tcp\naddress: 127.0.0.1\nport: ${p.tlsTcp}\ngroups: [${g}]\n` +
        'tls: { secret: mq }\ntcp: { to: b }\n',
      `kind: Listener\nname: ${g}-originate\naddress: 127.0.0.1\nport: ${p.originate}\ngroups: [${g}]\n` +
        'tcp: { to: secure }\n',
      `kind: Listener\nname: ${g}-originate-wrong\naddress: 127.0.0.1\nport: ${p.originateWrong}\n` +
        `groups: [${g}]\ntcp: { to: secure-other }\n`,
      `kind: Listener\nname: ${g}-sni-only\naddress: 127.0.0.1\nport: ${p.sniOnly}\ngroups: [${g}]\n` +
        'passthrough: [{ serverNames: [db.example], to: db }]\n',
    );
  }
  return { 'tcp.yaml': docs.join('---\n') };
}

test.before(async () => {
  try {
    const pki = makePki(tempDir(), 'tcp-ca');
    www = pki.issue('www', 'DNS:www.example');
    db = pki.issue('db', 'DNS:db.example');
    mq = pki.issue('mq', 'DNS:mq.example');
    const secure = pki.issue('secure', 'DNS:secure.example');
    caFile = pki.caCert;
    for (const c of [www, db, mq, secure]) chmodSync(c.key, 0o600);
    secureEcho = tls.createServer({ cert: secure.certPem, key: secure.keyPem }, (s) => {
      secureNames.push((s as tls.TLSSocket & { servername?: string }).servername ?? '');
      s.setEncoding('utf8');
      s.on('data', (d: string) => s.write(`S:${d}`));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => secureEcho.listen(0, '127.0.0.1', r));
    backends.A = await echoServer('A');
    backends.B = await echoServer('B');
    dbTls = tls.createServer({ cert: db.certPem, key: db.keyPem }, (s) => s.end('db\n'));
    await new Promise<void>((r) => dbTls.listen(0, '127.0.0.1', r));
    for (const v of ENVOY_VERSIONS)
      ports.set(v, {
        tcp: await freePort(),
        split: await freePort(),
        edge: await freePort(),
        tlsTcp: await freePort(),
        originate: await freePort(),
        originateWrong: await freePort(),
        sniOnly: await freePort(),
      });
    dir = writeTree(tree('a'));
    app = await startServer(dir);
    envoys.push(...(await startEnvoys(app, (v) => once(ports.get(v)!.tcp, 'hi').then((l) => l === 'A:hi'))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  for (const b of Object.values(backends)) b.server.close();
  dbTls?.close();
  secureEcho?.close();
});

test('bytes echo through each Envoy; an 80/20 split over 1,000 connections lands within 5 points', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = ports.get(v)!;
    assert.is(await once(p.tcp, 'ping'), 'A:ping', `Envoy ${v}`);
    const counts = { A: 0, B: 0 };
    for (let i = 0; i < 1000; i += 50) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => once(p.split, 'x')));
      for (const a of answers) counts[a.startsWith('A:') ? 'A' : 'B']++;
    }
    const share = counts.A / 10;
    assert.ok(share >= 75 && share <= 85, `Envoy ${v}: ${counts.A} of 1,000 to A`);
    console.log(`  Envoy ${v}: ${counts.A} of 1,000 connections to a (80%), ${counts.B} to b`);
  }
});

test('changing `to` keeps an established connection echoing; new connections go to the new service', async () => {
  const held = await Promise.all(ENVOY_VERSIONS.map((v) => Line.open(ports.get(v)!.tcp)));
  for (const l of held) assert.is(await l.ask('before'), 'A:before');
  writeTree(tree('b'), dir);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
  for (const v of ENVOY_VERSIONS)
    await waitFor(
      `Envoy ${v}: new connections to b`,
      () => once(ports.get(v)!.tcp, 'n').then((l) => l === 'B:n'),
      20_000,
    );
  for (const l of held) assert.is(await l.ask('after'), 'A:after', 'the established connection still reaches a');
  for (const l of held) l.close();
  for (const e of envoys) assert.is(await e.rejected(), 0, e.log().slice(-2000));
});

test('TLS passthrough by SNI beside a terminated name on the same port, and TLS terminated for TCP', async () => {
  const fp = (c: CertFiles) => new X509Certificate(c.certPem).fingerprint256;
  for (const v of ENVOY_VERSIONS) {
    const p = ports.get(v)!;
    assert.is(await certificateSeen(p.edge, 'db.example'), fp(db), `Envoy ${v}: the backend's own certificate`);
    assert.is(await certificateSeen(p.edge, 'www.example'), fp(www), `Envoy ${v}: fleetxds's certificate over SDS`);
    assert.is(await certificateSeen(p.tlsTcp, 'mq.example'), fp(mq), `Envoy ${v}: TCP listener's certificate`);
    assert.is(await certificateSeen(p.sniOnly, 'db.example'), fp(db), `Envoy ${v}: passthrough alone`);
    await certificateSeen(p.sniOnly, 'other.example').then(
      () => assert.unreachable(`Envoy ${v}: a name not passed through must be closed`),
      (err: Error) => assert.match(err.message, /socket disconnected|ECONNRESET|socket hang up/i),
    );
    const inside = await new Promise<string>((resolve, reject) => {
      const s = tls.connect(
        { host: '127.0.0.1', port: p.tlsTcp, servername: 'mq.example', rejectUnauthorized: false },
        () => s.write('over tls\n'),
      );
      s.setEncoding('utf8');
      let got = '';
      s.on('data', (d: string) => {
        got += d;
        if (got.includes('\n')) {
          resolve(got.trim());
          s.destroy();
        }
      });
      s.once('error', reject);
    });
    assert.is(inside, 'B:over tls', `Envoy ${v}: bytes inside the TLS reach the service`);
  }
});

test('TLS originated by Envoy to a TCP service, with the SNI the Service names, checked against its CA and names', async () => {
  for (const v of ENVOY_VERSIONS) {
    secureNames.length = 0;
    assert.is(await once(ports.get(v)!.originate, 'plain in'), 'S:plain in', `Envoy ${v}`);
    assert.equal(secureNames, ['secure.example'], `Envoy ${v}: the backend saw the Service's SNI`);
    // Its certificate names secure.example, not other.example: the handshake fails, nothing is echoed.
    const refused = await once(ports.get(v)!.originateWrong, 'to the wrong name').catch((e: Error) => e.message);
    assert.not.match(refused, /^S:/, `Envoy ${v}: ${refused}`);
    const envoy = envoys[ENVOY_VERSIONS.indexOf(v)]!;
    const failed = await envoy.stats('cluster.secure-other.ssl.fail_verify_san');
    assert.ok(Number(failed['cluster.secure-other.ssl.fail_verify_san']) >= 1, `Envoy ${v}: ${JSON.stringify(failed)}`);
  }
});

test.run();
