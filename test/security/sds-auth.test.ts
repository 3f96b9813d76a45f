/**
 * TLS private keys are never served to a client the transport did not authenticate: with default
 * settings REST answers 403 for secrets, per-type SDS ends with PERMISSION_DENIED, and ADS simply
 * does not answer the secret type while serving everything else. The waiver exists for loopback
 * only: the server refuses it on any other address.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadServerConfig } from '../../src/config/server-config.ts';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, names, T } from '../helpers/ads-client.ts';
import { makeCert } from '../helpers/certs.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

let app: RunningApp;
const NODE = { id: 'anyone', cluster: 'edge' };

test.before(async () => {
  const dir = tempDir();
  const cert = makeCert(dir, 'site');
  writeTree(
    {
      'edge.yaml': `kind: Secret
name: site-cert
certificateFile: ${cert.cert}
privateKeyFile: ${cert.key}
---
kind: Service
name: web
endpoints: [{ address: 10.0.0.1:80 }]
---
kind: Listener
name: edge
port: 8443
tls: { secret: site-cert }
virtualHosts: [site]
---
kind: VirtualHost
name: site
domains: ["*"]
routes: [{ to: web }]
`,
    },
    dir,
  );
  app = await startServer(dir, { insecureSds: false, rest: { holdMs: 0 } });
});

test.after(async () => {
  await app?.close();
});

test('REST: /v3/discovery:secrets is refused (403) to an unauthenticated poller, other types are served', async () => {
  const post = (type: string, body: object) =>
    fetch(`http://127.0.0.1:${app.restPort}/v3/discovery:${type}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const res = await post('secrets', { node: NODE, resource_names: ['site-cert'] });
  assert.is(res.status, 403);
  const text = await res.text();
  assert.match(text, /served only to authenticated clients/);
  assert.not.match(text, /PRIVATE KEY/);
  assert.is((await post('clusters', { node: NODE })).status, 200);
});

test('gRPC ADS: the secret type is not answered, the stream goes on serving the rest', async () => {
  const c = connect(app.grpcPort);
  const s = c.open();
  s.send({ node: NODE, type_url: T.secret, resource_names: ['site-cert'] });
  assert.ok(await s.quiet(400), 'no secret');
  s.send({ type_url: T.cluster });
  const cds = await s.next();
  assert.equal(names(cds), ['web'], 'the same stream still serves clusters');
  s.close();
  c.close();
});

test('gRPC per-type SDS: the stream ends with PERMISSION_DENIED', async () => {
  const c = connect(app.grpcPort, 'sds');
  const s = c.open();
  s.send({ node: NODE, resource_names: ['site-cert'] });
  const status = await s.status;
  assert.is(status.code, 7);
  assert.match(status.details, /authenticated clients/);
  c.close();
});

test('the loopback waiver is refused on a server reachable from the network', () => {
  const dir = tempDir();
  const file = join(dir, 'fleetxds.yaml');
  writeFileSync(
    file,
    'configDir: .\ndatabase: x.db\ngrpc: { listen: 0.0.0.0:18000 }\nadmin: { listen: 127.0.0.1:0 }\nsds: { ' +
      'insecureLoopbackOnly: true }\n',
  );
  assert.throws(
    () => loadServerConfig(file),
    (e: Error) =>
      e instanceof ConfigError && /refused while xDS listens beyond loopback \(0\.0\.0\.0:18000\)/.test(e.message),
  );
  writeFileSync(
    file,
    'configDir: .\ndatabase: x.db\ngrpc: { listen: 127.0.0.1:18000 }\nadmin: { listen: 127.0.0.1:0 }\nsds: { ' +
      'insecureLoopbackOnly: true }\n',
  );
  assert.ok(loadServerConfig(file).sds?.insecureLoopbackOnly);
});

test.run();
