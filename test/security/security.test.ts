/**
 * The real server process with TLS + mTLS on gRPC (node ids bound to client certificates), mTLS
 * and tokens on REST, and tokens with roles on the admin API.
 */
import * as grpc from '@grpc/grpc-js';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../src/security/tokens.ts';
import { connect, names, T } from '../helpers/ads-client.ts';
import { makePki, type CertFiles, type Pki } from '../helpers/certs.ts';
import { spawnServer, type ServerProcess } from '../helpers/process.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const PREFIX = 'spiffe://fleet.test/';
let pki: Pki, other: Pki;
let serverCert: CertFiles, edge1: CertFiles, edgeAny: CertFiles, foreign: CertFiles;
let server: ServerProcess;
const adminTok = newToken();
const readTok = newToken();
const restTok = newToken();

test.before(async () => {
  const dir = tempDir();
  pki = makePki(dir, 'fleet-ca');
  other = makePki(tempDir(), 'other-ca');
  serverCert = pki.issue('server', 'DNS:localhost,IP:127.0.0.1');
  edge1 = pki.issue('edge-1', `URI:${PREFIX}node/edge-1`);
  edgeAny = pki.issue('edge-star', `URI:${PREFIX}node/edge-*,URI:${PREFIX}cluster/edge`);
  foreign = other.issue('intruder', `URI:${PREFIX}node/edge-1`);
  const settings = join(tempDir(), 'fleetxds.yaml');
  const tls =
    `{ certFile: ${serverCert.cert}, keyFile: ${serverCert.key}, clientCaFile: ${pki.caCert}, ` +
    `identityPrefix: "${PREFIX}" }`;
  writeFileSync(
    settings,
    `configDir: ${writeTree(BASE)}
database: ${join(tempDir(), 'x.db')}
grpc: { listen: 127.0.0.1:0, tls: ${tls}, threads: ${Number(process.env.FLEETXDS_TEST_GRPC_THREADS) || 1} }
admin:
  listen: 127.0.0.1:0
  tokens:
    - { name: ops, sha256: ${adminTok.sha256}, role: admin }
    - { name: grafana, sha256: ${readTok.sha256}, role: read }
rest: { listen: 127.0.0.1:0, tls: ${tls}, tokens: [{ name: gateway, sha256: ${restTok.sha256}, role: read }] }
log: { level: info }
`,
  );
  server = await spawnServer(settings);
});

test.after(async () => {
  await server?.stop('SIGKILL');
});

function creds(client?: CertFiles): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(
    Buffer.from(pki.caPem),
    client ? Buffer.from(client.keyPem) : null,
    client ? Buffer.from(client.certPem) : null,
  );
}

async function attempt(
  client: CertFiles | undefined,
  node: { id: string; cluster: string },
): Promise<{ ok: boolean; code?: number; details?: string }> {
  const c = connect(server.grpcPort, 'ads', creds(client), {
    'grpc.ssl_target_name_override': 'localhost',
    'grpc.default_authority': 'localhost',
  });
  const s = c.open();
  s.send({ node, type_url: T.cluster });
  const result = await Promise.race([
    s.next(5000).then((r) => ({ ok: names(r).length === 2 })),
    s.status.then((st) => ({ ok: false, code: st.code, details: st.details })),
  ]);
  s.close();
  c.close();
  return result;
}

test('gRPC mTLS: a valid certificate for the claimed node gets config', async () => {
  assert.equal(await attempt(edge1, { id: 'edge-1', cluster: 'anything' }), { ok: true });
  assert.equal(await attempt(edgeAny, { id: 'edge-42', cluster: 'edge' }), { ok: true });
});

test('gRPC mTLS: refused without a certificate, with a certificate from another CA, or claiming another node', async () => {
  const none = await attempt(undefined, { id: 'edge-1', cluster: 'x' });
  assert.not.ok(none.ok);
  assert.is(none.code, grpc.status.UNAVAILABLE, 'TLS handshake refused');
  const alien = await attempt(foreign, { id: 'edge-1', cluster: 'x' });
  assert.not.ok(alien.ok);
  assert.is(alien.code, grpc.status.UNAVAILABLE);
  const spoof = await attempt(edge1, { id: 'edge-2', cluster: 'x' });
  assert.equal(spoof, {
    ok: false,
    code: grpc.status.PERMISSION_DENIED,
    details: 'node id "edge-2" is not allowed by the client certificate',
  });
  const wrongCluster = await attempt(edgeAny, { id: 'edge-9', cluster: 'payments' });
  assert.is(wrongCluster.code, grpc.status.PERMISSION_DENIED);
  assert.match(wrongCluster.details!, /cluster "payments"/);
});

function restPoll(
  client: CertFiles | undefined,
  nodeId: string,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ node: { id: nodeId, cluster: 'edge' } });
    const req = https.request(
      {
        host: '127.0.0.1',
        port: server.restPort,
        path: '/v3/discovery:clusters',
        method: 'POST',
        // A connection per poll: each is a proxy's first (a second '' on one connection is a rejection).
        agent: false,
        servername: 'localhost',
        ca: pki.caPem,
        cert: client?.certPem,
        key: client?.keyPem,
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test('REST: mTLS with node binding, and the token', async () => {
  const ok = await restPoll(edge1, 'edge-1', restTok.token);
  assert.is(ok.status, 200, ok.body);
  assert.is((await restPoll(edge1, 'edge-1')).status, 401, 'no token');
  assert.is((await restPoll(edge1, 'edge-1', 'wrong')).status, 401, 'wrong token');
  const spoof = await restPoll(edge1, 'edge-2', restTok.token);
  assert.is(spoof.status, 403);
  assert.match(spoof.body, /not allowed by the client certificate/);
  await restPoll(undefined, 'edge-1', restTok.token).then(
    (r) => assert.unreachable(`answered ${r.status} without a client certificate`),
    (err) => assert.ok(err),
  );
});

test("status: each node's client certificate (its names, sha256, expiry), on gRPC and REST", async () => {
  const c = connect(server.grpcPort, 'ads', creds(edgeAny), {
    'grpc.ssl_target_name_override': 'localhost',
    'grpc.default_authority': 'localhost',
  });
  const s = c.open();
  s.send({ node: { id: 'edge-77', cluster: 'edge' }, type_url: T.cluster });
  await s.next(5000);
  assert.is((await restPoll(edge1, 'edge-1', restTok.token)).status, 200);
  const { json } = await admin('GET', '/api/v1/status', readTok.token);
  const nodes = (json as { nodes: { nodeId: string; transport: string; clientCertificate?: object }[] }).nodes;
  const shown = (id: string, transport: string) =>
    nodes.find((n) => n.nodeId === id && n.transport.startsWith(transport))?.clientCertificate;
  const expected = (c: CertFiles) => {
    const x = new X509Certificate(c.certPem);
    return { names: x.subjectAltName, fingerprint: x.fingerprint256, notAfter: new Date(x.validTo).toISOString() };
  };
  assert.equal(shown('edge-77', 'grpc'), expected(edgeAny));
  assert.equal(shown('edge-1', 'rest'), expected(edge1));
  // The first to expire of the certificates presented, for an alert before a proxy is locked out.
  const earliest = Math.min(...[edgeAny, edge1].map((c) => Date.parse(expected(c).notAfter))) / 1000;
  const metrics = await fetch(`http://127.0.0.1:${server.adminPort}/metrics`, {
    headers: { authorization: `Bearer ${readTok.token}` },
  });
  assert.match(
    await metrics.text(),
    new RegExp(`^fleetxds_client_certificate_expiry_earliest_timestamp_seconds ${earliest}$`, 'm'),
  );
  s.close();
  c.close();
});

async function admin(method: string, path: string, token?: string, body?: object) {
  const res = await fetch(`http://127.0.0.1:${server.adminPort}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

test('admin: 401 without a token; a read-only token reads but cannot apply or roll back; an admin token can', async () => {
  assert.is((await admin('GET', '/api/v1/versions')).status, 401);
  assert.is((await admin('GET', '/metrics')).status, 401);
  assert.is((await admin('GET', '/healthz')).status, 200, 'health checks stay open');
  assert.is((await admin('GET', '/api/v1/versions', readTok.token)).status, 200);
  const denied = await admin('POST', '/api/v1/rollback', readTok.token, { versionId: 1 });
  assert.is(denied.status, 403);
  assert.match(denied.json.error, /read-only/);
  const applyDenied = await admin('POST', '/api/v1/apply', readTok.token, {});
  assert.is(applyDenied.status, 403, 'applying the directory is a decision');
  const applied = await admin('POST', '/api/v1/apply', adminTok.token, {});
  assert.equal([applied.status, applied.json.status], [200, 'unchanged']);
  const done = await admin('POST', '/api/v1/rollback', adminTok.token, { versionId: 1 });
  assert.is(done.status, 200);
  const audit = await admin('GET', '/api/v1/audit', readTok.token);
  assert.is(audit.json.audit[0].actor, 'ops', 'the audit log names the token');
  // Tokens never appear in logs.
  for (const t of [adminTok.token, readTok.token, restTok.token]) assert.not.ok(server.output().includes(t));
  assert.not.ok(server.output().includes(readFileSync(serverCert.key, 'utf8').split('\n')[1]!));
});

test.run();
