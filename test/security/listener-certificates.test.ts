/**
 * fleetxds's own listener certificates (grpc.tls, rest.tls) are renewed without a restart: when
 * their files change, new connections get the new certificate and open streams go on; a set that
 * cannot serve (key of another certificate, garbage, expired) is refused and the one served stays.
 * Checked on the real server process, with mTLS on both listeners (the client CA stays in force).
 */
import { X509Certificate } from 'node:crypto';
import { copyFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ListenerCertificate } from '../../src/app/listener-certificates.ts';
import { TLS_FILE_LIMITS, completesHandshake, readListenerTls } from '../../src/security/listener-tls.ts';
import { connect, names, T } from '../helpers/ads-client.ts';
import { makePki, type CertFiles } from '../helpers/certs.ts';
import { spawnServer, waitFor } from '../helpers/process.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';
import * as grpc from '@grpc/grpc-js';

const PREFIX = 'spiffe://fleet.test/';
const pki = makePki(tempDir(), 'fleet-ca');
const SAN = 'DNS:localhost,IP:127.0.0.1';
const first = pki.issue('server-a', SAN, 30);
const renewed = pki.issue('server-b', SAN, 60);
const edge = pki.issue('edge-1', `URI:${PREFIX}node/edge-1`);
const fingerprint = (c: CertFiles) => new X509Certificate(c.certPem).fingerprint256;

/** The certificate files as a listener is configured with them, and a way to replace them as a CA agent does. */
function certDir(from: CertFiles) {
  const dir = tempDir();
  const files = { certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key'), clientCaFile: pki.caCert };
  copyFileSync(from.cert, files.certFile);
  copyFileSync(from.key, files.keyFile);
  /** Writes `text` to `file` whole (a temporary file renamed into place). */
  const put = (file: string, text: string) => {
    writeFileSync(`${file}.new`, text);
    renameSync(`${file}.new`, file);
  };
  return { files, put };
}

test('a certificate set is read only if it can serve, and says which file is wrong', () => {
  const { files, put } = certDir(first);
  assert.is(readListenerTls(files).info.fingerprint, fingerprint(first));
  put(files.keyFile, renewed.keyPem);
  assert.throws(() => readListenerTls(files), /server\.key is not the private key of the certificate in .*server\.crt/);
  put(files.keyFile, 'not a key');
  assert.throws(() => readListenerTls(files), /server\.key: not a PEM private key/);
  put(files.certFile, 'not a certificate');
  assert.throws(() => readListenerTls(files), /server\.crt: not a PEM certificate/);
  assert.throws(() => readListenerTls({ ...files, certFile: '/nonexistent/x.crt' }), /\/nonexistent\/x\.crt: ENOENT/);
});

test('a reload serves a new usable set once, refuses an unusable or expired one, and keeps the one served', async () => {
  const { files, put } = certDir(first);
  const lines: { msg: string; reason?: string }[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  const cert = new ListenerCertificate('grpc', files, log);
  const served: string[] = [];
  const serve = (t: { cert: Buffer }) => void served.push(new X509Certificate(t.cert).fingerprint256);
  const steps: [what: string, change: () => void, outcome: string, fingerprint: string][] = [
    ['nothing changed', () => {}, 'unchanged', fingerprint(first)],
    [
      'the certificate renewed, the key not yet',
      () => put(files.certFile, renewed.certPem),
      'refused',
      fingerprint(first),
    ],
    ['then the key', () => put(files.keyFile, renewed.keyPem), 'served', fingerprint(renewed)],
    ['the same again', () => {}, 'unchanged', fingerprint(renewed)],
    ['garbage', () => put(files.keyFile, 'oops'), 'refused', fingerprint(renewed)],
  ];
  for (const [what, change, outcome, fp] of steps) {
    change();
    assert.is(await cert.reload(serve), outcome, what);
    assert.is(cert.served.fingerprint, fp, what);
  }
  assert.equal(served, [fingerprint(renewed)], 'the listener was handed the renewed set, once');
  assert.ok(lines.some((l) => l.msg.includes('not reloaded') && /not the private key/.test(l.reason ?? '')));
  // A certificate already expired when it is read again is not served either.
  put(files.keyFile, first.keyPem);
  put(files.certFile, first.certPem);
  const later = new ListenerCertificate('grpc', { ...files }, log, () => new Date(Date.now() + 40 * 86_400_000));
  put(files.certFile, renewed.certPem);
  put(files.keyFile, renewed.keyPem);
  assert.is(await later.reload(serve), 'served', 'valid for 60 days: 40 days from now it still is');
  put(files.certFile, first.certPem);
  put(files.keyFile, first.keyPem);
  assert.is(await later.reload(serve), 'refused', 'valid for 30 days: expired 40 days from now');
  assert.match(lines.at(-1)!.reason ?? '', /expired/);
});

test('certificate files past their bounds are refused before they are parsed; a reload keeps the one served', async () => {
  const { files, put } = certDir(first);
  const cert = new ListenerCertificate('grpc', files, pino({ level: 'silent' }));
  const served: string[] = [];
  const serve = (t: { cert: Buffer }) => void served.push(new X509Certificate(t.cert).fingerprint256);
  // A valid leaf followed by thousands of copies of the CA: a "valid" chain OpenSSL would take.
  const started = performance.now();
  put(files.certFile, renewed.certPem + pki.caPem.repeat(20_000));
  put(files.keyFile, renewed.keyPem);
  assert.throws(() => readListenerTls(files), /server\.crt: \d+ bytes; at most 262144 are accepted/);
  assert.is(await cert.reload(serve), 'refused');
  assert.ok(performance.now() - started < 2000, 'refused without parsing it');
  put(files.certFile, renewed.certPem + pki.caPem.repeat(TLS_FILE_LIMITS.chainLength));
  assert.throws(() => readListenerTls(files), /server\.crt: a chain of 11 certificates; at most 10/);
  put(files.certFile, renewed.certPem + pki.caPem);
  assert.is(await cert.reload(serve), 'served', 'a leaf and its CA are fine');
  assert.equal(served, [fingerprint(renewed)]);
  assert.throws(
    () => readListenerTls({ ...files, clientCaFile: writeTree({ 'ca.pem': pki.caPem.repeat(1001) }) + '/ca.pem' }),
    /ca\.pem: 1001 certificates; at most 1000/,
  );
});

test('a handshake is tried before a set is served: one that completes passes, a broken one is refused', async () => {
  const good = readListenerTls({ certFile: first.cert, keyFile: first.key }).tls;
  await completesHandshake(good);
  const mismatched = { ...good, key: readListenerTls({ certFile: renewed.cert, keyFile: renewed.key }).tls.key };
  await completesHandshake(mismatched).then(
    () => assert.unreachable('a certificate with another key cannot complete a handshake'),
    (err: Error) => assert.match(err.message, /key values mismatch|mismatch/i),
  );
});

/** The certificate a new TLS connection to `port` is shown (with a client certificate: mTLS). */
function presented(port: number, client: tls.ConnectionOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      {
        host: '127.0.0.1',
        port,
        servername: 'localhost',
        ca: pki.caPem,
        cert: edge.certPem,
        key: edge.keyPem,
        ...client,
      },
      () => {
        resolve(socket.getPeerX509Certificate()!.fingerprint256);
        socket.destroy();
      },
    );
    socket.on('error', reject);
  });
}

test('the running server serves a renewed certificate to new connections; open streams go on', async () => {
  const { files, put } = certDir(first);
  const settings = join(tempDir(), 'fleetxds.yaml');
  const listenerTls = `{ certFile: ${files.certFile}, keyFile: ${files.keyFile}, clientCaFile: ${files.clientCaFile}, identityPrefix: "${PREFIX}" }`;
  const threads = Number(process.env.FLEETXDS_TEST_GRPC_THREADS) || 1;
  writeFileSync(
    settings,
    `configDir: ${writeTree(BASE)}
database: ${join(tempDir(), 'x.db')}
grpc: { listen: 127.0.0.1:0, tls: ${listenerTls}, threads: ${threads} }
admin: { listen: 127.0.0.1:0 }
rest: { listen: 127.0.0.1:0, tls: ${listenerTls} }
watch: { enabled: true, debounceMs: 50 }
log: { level: info }
`,
  );
  const server = await spawnServer(settings);
  const c = connect(
    server.grpcPort,
    'ads',
    grpc.credentials.createSsl(Buffer.from(pki.caPem), Buffer.from(edge.keyPem), Buffer.from(edge.certPem)),
    {
      'grpc.ssl_target_name_override': 'localhost',
      'grpc.default_authority': 'localhost',
    },
  );
  try {
    assert.is(await presented(server.grpcPort), fingerprint(first));
    assert.is(await presented(server.restPort), fingerprint(first));
    const stream = c.open();
    stream.send({ node: { id: 'edge-1', cluster: 'edge' }, type_url: T.cluster });
    assert.is(names(await stream.next(5000)).length, 2);

    // A renewal as an agent writes it: the certificate, then the key (a moment where they do not match).
    put(files.certFile, renewed.certPem);
    await new Promise((r) => setTimeout(r, 300));
    put(files.keyFile, renewed.keyPem);
    // Every serving thread is handed the renewal: new connections, whichever thread accepts them, get it.
    await waitFor(
      'the renewed certificate on gRPC',
      async () => (await presented(server.grpcPort)) === fingerprint(renewed),
    );
    for (let i = 0; i < 8; i++) assert.is(await presented(server.grpcPort), fingerprint(renewed), `connection ${i}`);
    await waitFor(
      'the renewed certificate on REST',
      async () => (await presented(server.restPort)) === fingerprint(renewed),
    );

    // The stream opened before goes on, on its connection of the old certificate.
    stream.send({ type_url: T.listener });
    assert.is(names(await stream.next(5000)).length, 1, 'the open stream still answers');
    const expiry = new X509Certificate(renewed.certPem).validToDate.getTime() / 1000;
    const metrics = await (await fetch(`http://127.0.0.1:${server.adminPort}/metrics`)).text();
    assert.match(
      metrics,
      new RegExp(`^fleetxds_listener_certificate_expiry_timestamp_seconds\\{listener="grpc"\\} ${expiry}$`, 'm'),
    );
    // The status API (and its page) names what each listener serves now.
    const status = (await (await fetch(`http://127.0.0.1:${server.adminPort}/api/v1/status`)).json()) as {
      listenerCertificates: { listener: string; fingerprint: string; notAfter: string; subject: string }[];
    };
    const notAfter = new X509Certificate(renewed.certPem).validToDate.toISOString();
    assert.equal(
      status.listenerCertificates.map((c) => [c.listener, c.fingerprint, c.notAfter]),
      [
        ['grpc', fingerprint(renewed), notAfter],
        ['rest', fingerprint(renewed), notAfter],
      ],
    );
    assert.match(status.listenerCertificates[0]!.subject, /server-b/);

    // A key that is not one: refused, the renewed certificate stays.
    put(files.keyFile, 'not a key');
    await waitFor('the refusal logged', () => server.output().includes('listener certificate not reloaded'));
    assert.is(await presented(server.grpcPort), fingerprint(renewed));
    assert.is(await presented(server.restPort), fingerprint(renewed));
    stream.close();
  } finally {
    c.close();
    await server.stop('SIGKILL');
  }
});

test('TLS version and cipher settings hold on gRPC and REST, after a renewal too; an unknown cipher list stops the start', async () => {
  const { files, put } = certDir(first);
  const settings = join(tempDir(), 'fleetxds.yaml');
  const listenerTls = (extra: string) =>
    `{ certFile: ${files.certFile}, keyFile: ${files.keyFile}, clientCaFile: ${files.clientCaFile}, ` +
    `identityPrefix: "${PREFIX}", ${extra} }`;
  const write = (grpcExtra: string) =>
    writeFileSync(
      settings,
      `configDir: ${writeTree(BASE)}
database: ${join(tempDir(), 'x.db')}
grpc: { listen: 127.0.0.1:0, tls: ${listenerTls(grpcExtra)} }
admin: { listen: 127.0.0.1:0 }
rest: { listen: 127.0.0.1:0, tls: ${listenerTls('ciphers: ECDHE-ECDSA-AES256-GCM-SHA384')} }
watch: { enabled: true, debounceMs: 50 }
log: { level: info }
`,
    );
  write('minVersion: TLSv1.3');
  const server = await spawnServer(settings);
  const tls12 = { maxVersion: 'TLSv1.2' } as const;
  const refused = (p: Promise<string>) =>
    p.then(
      () => false,
      () => true,
    );
  try {
    const check = async (cert: CertFiles) => {
      assert.is(await presented(server.grpcPort), fingerprint(cert), 'TLS 1.3 is served');
      assert.ok(await refused(presented(server.grpcPort, tls12)), 'gRPC refuses TLS 1.2 (minVersion TLSv1.3)');
      const aes256 = { ...tls12, ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384' };
      assert.is(await presented(server.restPort, aes256), fingerprint(cert), 'REST: the listed cipher');
      const aes128 = { ...tls12, ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' };
      assert.ok(await refused(presented(server.restPort, aes128)), 'REST refuses a cipher not listed');
    };
    await check(first);
    put(files.certFile, renewed.certPem);
    put(files.keyFile, renewed.keyPem);
    await waitFor('the renewal served', async () => (await presented(server.grpcPort)) === fingerprint(renewed));
    await waitFor('the renewal served on REST', async () => {
      const p = presented(server.restPort, { ...tls12, ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384' });
      return (await p) === fingerprint(renewed);
    });
    await check(renewed);
  } finally {
    await server.stop('SIGKILL');
  }
  write('ciphers: NOT-A-CIPHER');
  const err = await spawnServer(settings).then(
    (s) => (void s.stop('SIGKILL'), undefined),
    (e: Error) => e,
  );
  assert.ok(err, 'the server did not start');
  assert.match(err.message, /fleetxds: grpc\.tls: tls\.ciphers "NOT-A-CIPHER": .*no cipher match/i);
});

test('a server whose certificate and key do not match does not start, and says why', async () => {
  const { files, put } = certDir(first);
  put(files.keyFile, renewed.keyPem);
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${writeTree(BASE)}
database: ${join(tempDir(), 'x.db')}
grpc: { listen: 127.0.0.1:0, tls: { certFile: ${files.certFile}, keyFile: ${files.keyFile} } }
admin: { listen: 127.0.0.1:0 }
`,
  );
  const err = await spawnServer(settings).then(
    (s) => (void s.stop('SIGKILL'), undefined),
    (e: Error) => e,
  );
  assert.ok(err, 'the server did not start');
  assert.match(err.message, /exited with 1/);
  assert.match(err.message, /fleetxds: grpc\.tls: .*server\.key is not the private key of the certificate/);
});

test.run();
