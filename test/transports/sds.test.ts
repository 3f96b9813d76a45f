/**
 * TLS through SDS: secrets from files, validated, rotated without restarts, never leaked.
 */
import { copyFileSync, chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { loadSecret } from '../../src/source/secrets.ts';
import { connect, names, T, type Json } from '../helpers/ads-client.ts';
import { makeCert, pemBody, type CertFiles } from '../helpers/certs.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, diagnosticsOf, tempDir, writeTree } from '../helpers/tree.ts';

function tree(certDir: string): Record<string, string> {
  return {
    ...BASE,
    'services.yaml': BASE['services.yaml']!.replace(
      'name: api\nprotocol: http2\n',
      'name: api\nprotocol: http2\ntls: { sni: api.internal, caSecret: upstream-ca, clientSecret: client-cert }\n',
    ),
    'edge.yaml': BASE['edge.yaml']!.replace('port: 8080\n', 'port: 8443\ntls: { secret: edge-cert }\n'),
    'secrets.yaml': [
      `kind: Secret\nname: edge-cert\ncertificateFile: ${certDir}/edge.crt\nprivateKeyFile: ${certDir}/edge.key\n`,
      `kind: Secret\nname: client-cert\ncertificateFile: ${certDir}/client.crt\nprivateKeyFile: ` +
        `${certDir}/client.key\n`,
      `kind: Secret\nname: upstream-ca\ncaFile: ${certDir}/ca.crt\n`,
    ].join('---\n'),
  };
}

function inlineCert(res: Json): string {
  return Buffer.from(res.tls_certificate.certificate_chain.inline_bytes, 'base64').toString();
}

const ack = (r: Json, extra: Json = {}) => ({
  type_url: r.type_url,
  version_info: r.version_info,
  response_nonce: r.nonce,
  ...extra,
});

let certDir: string;
let edge: CertFiles, client: CertFiles, ca: CertFiles;
let app: RunningApp;
let logs: string[];

test.before.each(async () => {
  certDir = tempDir();
  edge = makeCert(certDir, 'edge');
  client = makeCert(certDir, 'client');
  ca = makeCert(certDir, 'ca');
  logs = [];
  app = await startServer(writeTree(tree(certDir)), { watch: true, logLines: logs });
});
test.after.each(async () => {
  await app.close();
});

test('listeners and clusters reference secrets over SDS; the secrets are served over ADS', async () => {
  const c = connect(app.grpcPort);
  const s = c.open();
  s.send({ node: { id: 'e1', cluster: 'x' }, type_url: T.listener });
  const lds = await s.next();
  const tls = lds.resources[0].filter_chains[0].transport_socket.typed_config;
  assert.equal(tls.common_tls_context.tls_certificate_sds_secret_configs, [
    { name: 'edge-cert', sds_config: { ads: {}, resource_api_version: 'V3' } },
  ]);
  s.send({ type_url: T.cluster });
  const cds = await s.next();
  const up = cds.resources.find((r: Json) => r.name === 'api').transport_socket.typed_config.common_tls_context;
  assert.is(up.validation_context_sds_secret_config.name, 'upstream-ca');
  assert.is(up.tls_certificate_sds_secret_configs[0].name, 'client-cert');
  s.send({ type_url: T.secret, resource_names: ['edge-cert', 'client-cert', 'upstream-ca'] });
  const sds = await s.next();
  assert.equal(names(sds), ['client-cert', 'edge-cert', 'upstream-ca']);
  assert.is(inlineCert(sds.resources.find((r: Json) => r.name === 'edge-cert')), edge.certPem);
  assert.is(
    Buffer.from(
      sds.resources.find((r: Json) => r.name === 'upstream-ca').validation_context.trusted_ca.inline_bytes,
      'base64',
    ).toString(),
    ca.certPem,
  );
  s.close();
  c.close();
});

test('a renewed certificate gives exactly one new SDS response per subscribed node, and no LDS/CDS push', async () => {
  const c = connect(app.grpcPort);
  const s = c.open();
  s.send({ node: { id: 'e1', cluster: 'x' }, type_url: T.cluster });
  s.send({ type_url: T.listener });
  s.send({ type_url: T.secret, resource_names: ['edge-cert'] });
  for (let i = 0; i < 3; i++) {
    const r = await s.next();
    s.send(ack(r, r.type_url === T.secret ? { resource_names: ['edge-cert'] } : {}));
  }
  // A node of another group that does not use the secret.
  const other = c.open();
  other.send({ node: { id: 'o1', cluster: 'x' }, type_url: T.secret, resource_names: ['client-cert'] });
  const o1 = await other.next();
  other.send(ack(o1, { resource_names: ['client-cert'] }));
  assert.ok(await s.quiet(300));
  // Renew the way certbot does: new files renamed into place.
  const renewed = makeCert(tempDir(), 'edge', { cn: 'edge-renewed' });
  copyFileSync(renewed.cert, join(certDir, 'edge.crt.new'));
  copyFileSync(renewed.key, join(certDir, 'edge.key.new'));
  chmodSync(join(certDir, 'edge.key.new'), 0o600);
  renameSync(join(certDir, 'edge.key.new'), join(certDir, 'edge.key'));
  renameSync(join(certDir, 'edge.crt.new'), join(certDir, 'edge.crt'));
  const r = await s.next(5000);
  assert.is(r.type_url, T.secret);
  assert.is(inlineCert(r.resources[0]), renewed.certPem);
  s.send(ack(r, { resource_names: ['edge-cert'] }));
  assert.ok(await s.quiet(600), 'no other response (no LDS/CDS version)');
  assert.ok(await other.quiet(100), 'a node not using the secret gets nothing');
  const fp = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/secrets`)).json()).secrets.find(
    (x: Json) => x.name === 'edge-cert',
  );
  assert.match(fp.subject, /edge-renewed/);
  s.close();
  other.close();
  c.close();
});

test('a broken renewal (key not matching) keeps the last good secret and is reported', async () => {
  const c = connect(app.grpcPort);
  const s = c.open();
  s.send({ node: { id: 'e1', cluster: 'x' }, type_url: T.secret, resource_names: ['edge-cert'] });
  const r1 = await s.next();
  s.send(ack(r1, { resource_names: ['edge-cert'] }));
  const stranger = makeCert(tempDir(), 'stranger');
  writeFileSync(join(certDir, 'edge.crt'), stranger.certPem); // the old key stays: mismatch
  const rej = await (async () => {
    for (let i = 0; i < 50; i++) {
      await new Promise((res) => setTimeout(res, 100));
      const last = app.stores.rejections.latest();
      if (last?.source === 'secret files') return last;
    }
    return undefined;
  })();
  assert.ok(rej, 'rejection recorded');
  assert.ok(rej.diagnostics.some((d) => /does not match the certificate/.test(d.message)));
  assert.ok(await s.quiet(300), 'the last good secret keeps being served');
  s.close();
  c.close();
});

test('the private key never appears in logs, status output, history or the database', async () => {
  const c = connect(app.grpcPort);
  const s = c.open();
  s.send({ node: { id: 'e1', cluster: 'x' }, type_url: T.secret, resource_names: ['edge-cert', 'client-cert'] });
  await s.next();
  s.send({ type_url: T.secret, version_info: 'x', response_nonce: 'nope', resource_names: ['edge-cert'] });
  const outputs: string[] = [...logs];
  for (const path of [
    '/api/v1/config',
    '/api/v1/secrets',
    '/api/v1/nodes',
    '/api/v1/versions',
    '/api/v1/groups/default/resources/secret',
    '/api/v1/nacks',
  ]) {
    outputs.push(await (await fetch(`http://127.0.0.1:${app.adminPort}${path}`)).text());
  }
  const redacted = JSON.parse(outputs[outputs.length - 2]!);
  assert.ok(redacted.resources.every((r: Json) => r.material === '(redacted)' && r.fingerprint));
  outputs.push(JSON.stringify(app.stores.revisions.list()), JSON.stringify(app.stores.revisions.latest()));
  app.stores.checkpoint();
  const dbBytes = readFileSync(app.stores.path).toString('latin1');
  for (const k of [edge, client]) {
    for (const line of pemBody(k.keyPem)) {
      for (const o of outputs) assert.not.ok(o.includes(line), 'private key in status/log output');
      assert.not.ok(dbBytes.includes(line), 'private key in the database');
      assert.not.ok(
        dbBytes.includes(Buffer.from(k.keyPem).toString('base64').slice(0, 40)),
        'private key (base64) in the database',
      );
    }
  }
  s.close();
  c.close();
});

test('several certificates on one port, chosen by SNI: one filter chain each, every secret served', async () => {
  await app.close();
  const other = makeCert(certDir, 'other', { cn: 'other.example' });
  const files = tree(certDir);
  files['secrets.yaml'] +=
    `---\nkind: Secret\nname: other-cert\ncertificateFile: ${other.cert}\nprivateKeyFile: ${other.key}\n`;
  files['edge.yaml'] = files['edge.yaml']!.replace(
    'tls: { secret: edge-cert }',
    'tls: { secret: edge-cert, sni: [{ serverNames: [other.example, "*.other.example"], secret: other-cert }] }',
  );
  app = await startServer(writeTree(files));
  const c = connect(app.grpcPort);
  const s = c.open();
  s.send({ node: { id: 'sni', cluster: 'x' }, type_url: T.listener });
  const lds = await s.next();
  const l = lds.resources[0];
  assert.is(l.listener_filters[0].name, 'envoy.filters.listener.tls_inspector');
  assert.equal(
    l.filter_chains.map((fc: Json) => fc.filter_chain_match?.server_names ?? 'default'),
    [['other.example', '*.other.example'], 'default'],
  );
  assert.equal(
    l.filter_chains.map(
      (fc: Json) => fc.transport_socket.typed_config.common_tls_context.tls_certificate_sds_secret_configs[0].name,
    ),
    ['other-cert', 'edge-cert'],
  );
  s.send({ type_url: T.secret, resource_names: ['edge-cert', 'other-cert'] });
  const sds = await s.next();
  assert.equal(names(sds), ['edge-cert', 'other-cert']);
  assert.is(inlineCert(sds.resources[1]), other.certPem);
  s.close();
  c.close();
  const clash = await diagnosticsOf({
    ...files,
    'edge.yaml': files['edge.yaml'].replace(
      'sni: [{ serverNames: [other.example, "*.other.example"], secret: other-cert }]',
      'sni: [{ serverNames: [a.example], secret: other-cert }, { serverNames: [A.example], secret: client-cert }]',
    ),
  });
  assert.ok(
    clash.some((d) => d.code === 'FXDS_CONFLICT' && /server name "A.example" is also in tls.sni\[0\]/.test(d.message)),
  );
});

test('validation: mismatched key, expired and soon-expiring certificates, unreadable files, loose permissions', async () => {
  const dir = tempDir();
  const a = makeCert(dir, 'a');
  const b = makeCert(dir, 'b');
  const mismatched = await diagnosticsOf({
    ...BASE,
    's.yaml': `kind: Secret\nname: s\ncertificateFile: ${a.cert}\nprivateKeyFile: ${b.key}\n`,
  });
  assert.ok(
    mismatched.some(
      (d) =>
        d.severity === 'error' &&
        d.message === 'the private key does not match the certificate' &&
        d.subject === 'Secret/s' &&
        d.location?.file === 's.yaml',
    ),
  );
  const doc = { kind: 'Secret' as const, name: 's', certificateFile: a.cert, privateKeyFile: a.key };
  const expired = await loadSecret(doc, dir, undefined, new Date(Date.now() + 400 * 86_400_000));
  assert.ok(expired.diagnostics.some((d) => d.severity === 'error' && /expired on/.test(d.message)));
  assert.is(expired.material, undefined);
  const soon = await loadSecret(doc, dir, undefined, new Date(Date.now() + 360 * 86_400_000));
  assert.ok(soon.diagnostics.some((d) => d.severity === 'warning' && /expires on/.test(d.message)));
  assert.ok(soon.material);
  const missing = await diagnosticsOf({
    ...BASE,
    's.yaml': `kind: Secret\nname: s\ncertificateFile: ${dir}/nope.crt\nprivateKeyFile: ${a.key}\n`,
  });
  assert.ok(
    missing.some(
      (d) =>
        d.severity === 'error' && /cannot read .*nope\.crt: ENOENT/.test(d.message) && d.path === 'certificateFile',
    ),
  );
  chmodSync(a.key, 0o644);
  const loose = await loadSecret(doc, dir, undefined);
  assert.ok(loose.diagnostics.some((d) => d.severity === 'warning' && /accessible to group or others/.test(d.message)));
  // 0640 with a dedicated group is what the warning recommends: no warning for it.
  chmodSync(a.key, 0o640);
  const grouped = await loadSecret(doc, dir, undefined);
  assert.not.ok(grouped.diagnostics.some((d) => /accessible to group or others/.test(d.message)));
  writeFileSync(join(dir, 'junk.crt'), 'not a certificate');
  const junk = await loadSecret({ kind: 'Secret', name: 'j', caFile: join(dir, 'junk.crt') }, dir, undefined);
  assert.ok(junk.diagnostics.some((d) => /CA bundle does not parse/.test(d.message)));
  // Messages about secrets never carry the material.
  for (const d of [...mismatched, ...expired.diagnostics, ...soon.diagnostics])
    for (const line of pemBody(b.keyPem).concat(pemBody(a.keyPem))) assert.not.ok(d.message.includes(line));
});

test('secret files written for file-subscribed Envoys are owner-only', async () => {
  await app.close();
  const out = tempDir();
  app = await startServer(writeTree(tree(certDir)), { files: { dir: out } });
  await app.filesIdle();
  const { statSync } = await import('node:fs');
  const mode = statSync(join(out, 'default', 'sds', 'edge-cert.json')).mode & 0o777;
  assert.is(mode, 0o600);
});

test.run();
