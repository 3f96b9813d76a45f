/**
 * A gRPC-Go application reaches fleetxds over mTLS (gRFC A65: `channel_creds` of type tls in the
 * bootstrap `fleetxds bootstrap --mode grpc --tls-*` prints), its node id bound to its certificate;
 * a certificate for another node id is refused; a renewed certificate is presented on the next
 * connection without restarting the application. The client is test/grpc-go (built by
 * test/grpc-go/build.sh); @grpc/grpc-js-xds has no TLS channel credentials for its xDS server.
 */
import { X509Certificate } from 'node:crypto';
import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { makePki, type CertFiles, type Pki } from '../helpers/certs.ts';
import { startBackend, type Backend } from '../helpers/greeter.ts';
import { runGoClient, withLog } from '../helpers/grpc-go.ts';
import { runCli, waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const PREFIX = 'spiffe://fleet.test/';

let pki: Pki;
let dir: string;
let app: RunningApp;
let backend: Backend;
let settings: string;
let serverCert: CertFiles;

/** `fleetxds bootstrap --mode grpc` for a node, with the TLS flags. */
function bootstrapFor(nodeId: string, cert: CertFiles): Record<string, unknown> {
  const r = runCli([
    'bootstrap',
    '--config',
    settings,
    '--mode',
    'grpc',
    '--node-id',
    nodeId,
    '--server',
    `127.0.0.1:${app.grpcPort}`,
    '--tls-ca',
    pki.caCert,
    '--tls-cert',
    cert.cert,
    '--tls-key',
    cert.key,
  ]);
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

async function presented(nodeId: string): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`);
  const status = (await res.json()) as { nodes: { nodeId: string; clientCertificate?: { fingerprint: string } }[] };
  return status.nodes.filter((n) => n.nodeId === nodeId).map((n) => n.clientCertificate?.fingerprint ?? 'none');
}

const fingerprint = (file: string) => new X509Certificate(readFileSync(file)).fingerprint256;

test.before(async () => {
  pki = makePki(tempDir());
  serverCert = pki.issue('fleetxds', 'IP:127.0.0.1');
  backend = await startBackend('only');
  dir = writeTree({
    'grpc.yaml': `kind: Service
name: greeter
protocol: grpc
endpoints: [{ address: 127.0.0.1:${backend.port} }]
---
kind: GrpcService
name: greeter
target: greeter.internal:50051
routes: [{ to: greeter }]
`,
  });
  const tls = { certFile: serverCert.cert, keyFile: serverCert.key, clientCaFile: pki.caCert, identityPrefix: PREFIX };
  app = await startServer(dir, { grpc: { tls, maxConnectionAgeMs: 2000, maxConnectionAgeGraceMs: 500 } });
  settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${dir}\ndatabase: /nonexistent/x.db\nadmin: { listen: 127.0.0.1:0 }\n` +
      `grpc: { listen: 127.0.0.1:${app.grpcPort}, tls: { certFile: ${serverCert.cert}, keyFile: ${serverCert.key}, ` +
      `clientCaFile: ${pki.caCert}, identityPrefix: "${PREFIX}" } }\n`,
  );
});

test.after(async () => {
  await app?.close();
  await backend?.close();
});

test('a gRPC-Go application reaches fleetxds over mTLS and routes by the config served to its node', async () => {
  const cert = pki.issue('go-client-1', `URI:${PREFIX}node/go-client-1`);
  const go = runGoClient('greeter.internal:50051', bootstrapFor('go-client-1', cert), ['-hold', '3s']);
  await waitFor('the node connected', async () => (await presented('go-client-1')).length > 0, 20_000).catch(
    withLog(go),
  );
  assert.equal([...new Set(await presented('go-client-1'))], [fingerprint(cert.cert)]);
  assert.is(await go.done, 0, go.lines.join('\n'));
  assert.is(go.lines[0], 'ok only');
  assert.ok(backend.calls > 0);
});

test('a certificate for another node id is refused: the application gets no config', async () => {
  const other = pki.issue('go-other', `URI:${PREFIX}node/someone-else`);
  const before = backend.calls;
  const go = runGoClient('greeter.internal:50051', bootstrapFor('go-client-2', other), ['-wait', '5s']);
  assert.is(await go.done, 1);
  assert.match(go.lines.join('\n'), /^error /);
  assert.equal(await presented('go-client-2'), []);
  assert.is(backend.calls, before);
});

test('a renewed client certificate is presented on the next connection, without restarting the application', async () => {
  const cert = pki.issue('go-client-3', `URI:${PREFIX}node/go-client-3`);
  const bootstrap = bootstrapFor('go-client-3', cert) as { xds_servers: { channel_creds: { config: object }[] }[] };
  // The bootstrap's refresh is a minute; the test does not wait that long.
  Object.assign(bootstrap.xds_servers[0]!.channel_creds[0]!.config, { refresh_interval: '1s' });
  const go = runGoClient('greeter.internal:50051', bootstrap, ['-hold', '20s']);
  await waitFor(
    'first certificate',
    async () => (await presented('go-client-3')).includes(fingerprint(cert.cert)),
    20_000,
  ).catch(withLog(go));
  const next = pki.issue('go-client-3-renewed', `URI:${PREFIX}node/go-client-3`);
  // As a CA agent writes them: each file whole, renamed into place.
  copyFileSync(next.cert, `${cert.cert}.new`);
  renameSync(`${cert.cert}.new`, cert.cert);
  copyFileSync(next.key, `${cert.key}.new`);
  renameSync(`${cert.key}.new`, cert.key);
  // fleetxds closes connections after 2 s (maxConnectionAgeMs): the next one presents the renewal.
  await waitFor(
    'the renewed certificate presented',
    async () => (await presented('go-client-3')).includes(fingerprint(next.cert)),
    20_000,
  ).catch(withLog(go));
  assert.is(await go.done, 0, go.lines.join('\n'));
  assert.is(go.lines[0], 'ok only');
  assert.match(go.lines[1] ?? '', /^held [1-9][0-9]* /);
});

test.run();
