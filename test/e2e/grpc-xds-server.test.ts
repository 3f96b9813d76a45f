/**
 * xDS-enabled gRPC servers (gRFC A36) with access rules (A41) and mTLS between applications from
 * certificate providers (A29), with @grpc/grpc-js-xds on both sides against fleetxds. The bootstraps
 * are fleetxds's own (grpcBootstrap with the group's certificate providers): the server binds with
 * xDS server credentials and serves only once its GrpcServer is served; the client dials
 * xds:///greeter.mesh:50051 with xDS channel credentials and presents its certificate.
 */
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { grpcBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { grpcCertificateProviders, type FileWatcherProvider } from '../../src/bootstrap/grpc-certificates.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { makePki, type Pki } from '../helpers/certs.ts';
import { greeterMethod } from '../helpers/greeter.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

// grpc-js-xds 1.14 enforces RBAC only with this set (read when it loads); without it a server
// refuses (NACKs) a listener with access rules and does not serve.
process.env.GRPC_XDS_EXPERIMENTAL_RBAC = 'true';
const xds = createRequire(import.meta.url)('@grpc/grpc-js-xds') as typeof import('@grpc/grpc-js-xds');
xds.register();

const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';
const Greeter: grpc.ServiceDefinition = {
  SayHello: greeterMethod('SayHello'),
  SayGoodbye: greeterMethod('SayGoodbye'),
};
const GreeterClient = grpc.makeGenericClientConstructor(Greeter, 'Greeter');
type Unary = (
  req: unknown,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (e: grpc.ServiceError | null) => void,
) => void;

let pki: Pki;
let dir: string;
let app: RunningApp;
let port: number;
let server: InstanceType<typeof xds.XdsServer>;
let served = 0;
let bound: Promise<number>;
const clients: grpc.Client[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

function tree(opts: { server: boolean; san?: string }): Record<string, string> {
  return {
    'groups.yaml': `kind: NodeGroup
name: servers
match: { cluster: greeter-servers }
---
kind: NodeGroup
name: callers
match: { cluster: callers }
`,
    'secrets.yaml': `kind: Secret
name: mesh-ca
caFile: ${pki.caCert}
---
kind: Secret
name: greeter-identity
certificateFile: ${join(pki.dir, 'greeter.crt')}
privateKeyFile: ${join(pki.dir, 'greeter.key')}
---
kind: Secret
name: caller-identity
certificateFile: ${join(pki.dir, 'caller.crt')}
privateKeyFile: ${join(pki.dir, 'caller.key')}
`,
    'greeter.yaml': `kind: Service
name: greeter
protocol: grpc
endpoints: [{ address: 127.0.0.1:${port} }]
tls:
  caSecret: mesh-ca
  clientSecret: caller-identity
  subjectAltNames: [{ type: uri, exact: ${opts.san ?? 'spiffe://mesh/greeter'} }]
---
kind: GrpcService
name: greeter
target: greeter.mesh:50051
groups: [callers]
routes: [{ to: greeter }]
`,
    ...(opts.server && {
      'server.yaml': `kind: GrpcServer
name: greeter
address: 127.0.0.1
port: ${port}
groups: [servers]
tls: { secret: greeter-identity, clientCa: mesh-ca }
access:
  deny: [{ name: no-goodbyes, methods: [helloworld.Greeter/SayGoodbye] }]
  allow: [{ name: callers, principals: [{ exact: spiffe://mesh/caller }] }]
`,
    }),
  };
}

/** fleetxds's bootstrap for a node of `group`, its certificate files moved where `paths` says. */
async function bootstrapFor(
  nodeId: string,
  cluster: string,
  group: string,
  paths: Record<string, string> = {},
  from = dir,
) {
  const { model } = await checkTree(from);
  const providers = grpcCertificateProviders(model!, group, from);
  for (const [name, p] of Object.entries(paths)) {
    const c = (providers[name] as FileWatcherProvider).config;
    c.certificate_file = join(p, 'cert.pem');
    c.private_key_file = join(p, 'key.pem');
  }
  return grpcBootstrap({ id: nodeId, cluster }, { host: '127.0.0.1', port: app.grpcPort }, providers);
}

async function client(nodeId: string, paths: Record<string, string> = {}): Promise<(m: string) => Promise<number>> {
  const bootstrap = await bootstrapFor(nodeId, 'callers', 'callers', paths);
  const c = new GreeterClient(
    'xds:///greeter.mesh:50051',
    new xds.XdsChannelCredentials(grpc.credentials.createInsecure()),
    { [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap) },
  );
  clients.push(c);
  return (m: string) =>
    new Promise((resolve) =>
      (c as unknown as Record<string, Unary>)[m]!(
        { name: 'x' },
        new grpc.Metadata(),
        { deadline: Date.now() + 5000 },
        (e) => resolve(e ? e.code : grpc.status.OK),
      ),
    );
}

test.before(async () => {
  pki = makePki(tempDir());
  pki.issue('greeter', 'URI:spiffe://mesh/greeter,DNS:localhost');
  pki.issue('caller', 'URI:spiffe://mesh/caller');
  port = await freePort();
  dir = writeTree(tree({ server: false }));
  app = await startServer(dir, { watch: true });
  // The application's bootstrap is made from the tree it will be served (with its GrpcServer).
  const bootstrap = await bootstrapFor(
    'greeter-1',
    'greeter-servers',
    'servers',
    {},
    writeTree(tree({ server: true })),
  );
  server = new xds.XdsServer({ [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap) });
  const answer = (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
    served++;
    cb(null, { message: 'hi' });
  };
  server.addService(Greeter, { SayHello: answer, SayGoodbye: answer });
  bound = new Promise((resolve, reject) =>
    server.bindAsync(
      `127.0.0.1:${port}`,
      new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure()),
      (e, p) => (e ? reject(e) : resolve(p)),
    ),
  );
});

test.after(async () => {
  for (const c of clients) c.close();
  server?.forceShutdown();
  await app?.close();
});

test('the server does not serve before fleetxds sends its listener, and serves once it does', async () => {
  const early = await Promise.race([
    bound.then(() => 'serving'),
    new Promise((r) => setTimeout(() => r('waiting'), 1500)),
  ]);
  assert.is(early, 'waiting');
  const refused = await new Promise<boolean>((resolve) => {
    const sock = createConnection(port, '127.0.0.1');
    sock.once('connect', () => (sock.destroy(), resolve(false)));
    sock.once('error', () => resolve(true));
  });
  assert.ok(refused, 'nothing listens on the port before the listener arrives');
  for (const [name, text] of Object.entries(tree({ server: true }))) writeFileSync(join(dir, name), text);
  assert.is(await bound, port);
  // The server (grpc-js, connected in its group while the tree was checked) needs an opt-in for
  // access rules: the version applied says so, at the rules' file:line.
  const warnings = app.stores.revisions.latest()!.warnings.map((d) => formatDiagnostic(d));
  assert.ok(
    warnings.some((w) =>
      /^server\.yaml:8:3: warning FXDS_CLIENT_COMPAT: GrpcServer\/greeter access: node group "servers": .*grpc-js needs GRPC_XDS_EXPERIMENTAL_RBAC=true/.test(
        w,
      ),
    ),
    warnings.join('\n'),
  );
});

test('a client presenting its certificate is served over mTLS; an RBAC-denied method gets PERMISSION_DENIED', async () => {
  const call = await client('caller-1');
  await waitFor('a served RPC', async () => (await call('SayHello')) === grpc.status.OK, 20_000);
  const before = served;
  assert.is(await call('SayHello'), grpc.status.OK);
  assert.is(await call('SayGoodbye'), grpc.status.PERMISSION_DENIED);
  assert.is(served, before + 1, 'the denied RPC never reached the handler');
});

test('a certificate with a name no rule allows is refused with PERMISSION_DENIED', async () => {
  const stranger = pki.issue('stranger', 'URI:spiffe://mesh/stranger');
  const home = join(tempDir(), 'stranger');
  mkdirSync(home);
  writeFileSync(join(home, 'cert.pem'), stranger.certPem);
  writeFileSync(join(home, 'key.pem'), stranger.keyPem, { mode: 0o600 });
  const call = await client('stranger-1', { 'caller-identity': home });
  await waitFor('an answer', async () => (await call('SayHello')) !== grpc.status.UNAVAILABLE, 20_000);
  assert.is(await call('SayHello'), grpc.status.PERMISSION_DENIED);
});

test('a server whose certificate lacks the name the service requires is refused by the client', async () => {
  const call = await client('caller-2');
  await waitFor('served', async () => (await call('SayHello')) === grpc.status.OK, 20_000);
  writeFileSync(join(dir, 'greeter.yaml'), tree({ server: true, san: 'spiffe://mesh/someone-else' })['greeter.yaml']!);
  await waitFor('refused', async () => (await call('SayHello')) === grpc.status.UNAVAILABLE, 20_000);
  const after = served;
  assert.is(await call('SayHello'), grpc.status.UNAVAILABLE);
  assert.is(served, after);
});

test.run();
