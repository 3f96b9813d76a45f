/**
 * Aggregate services (failover across services, gRFC A37 for gRPC) through real Envoy 1.40 and
 * 1.36 and a @grpc/grpc-js-xds client: requests go to the first member while it has healthy
 * endpoints, to the second once the first's backend is gone, and back once it returns.
 */
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { closeIdleConnections, httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import {
  startBackend,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { waitFor } from '../helpers/process.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

let app: RunningApp;
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, number>();
let primaryPort: number;
let primary: Server | undefined;
let secondary: Server;
let grpcPrimary: Backend | undefined;
let grpcPrimaryPort: number;
let grpcSecondary: Backend;
let client: GreeterClientHandle;

function httpBackend(name: string, port = 0): Promise<Server> {
  const s = createServer((req, res) => {
    req.resume();
    res.end(name);
  });
  return new Promise((r) => s.listen(port, '127.0.0.1', () => r(s)));
}

const portOf = (s: Server) => (s.address() as { port: number }).port;

test.before(async () => {
  try {
    primaryPort = await freePort();
    primary = await httpBackend('primary', primaryPort);
    secondary = await httpBackend('secondary');
    grpcPrimary = await startBackend('primary');
    grpcPrimaryPort = grpcPrimary.port;
    grpcSecondary = await startBackend('secondary');
    const docs = [
      // Outlier detection ejects the first member's endpoint once its backend refuses connections:
      // Envoy's aggregate cluster then moves the requests to the next member, and back when the
      // ejection ends and the backend answers again.
      `kind: Service
name: primary
endpoints: [{ address: 127.0.0.1:${primaryPort} }]
outlierDetection: { consecutive5xx: 1, interval: 200ms, baseEjectionTime: 1s, maxEjectionPercent: 100 }
`,
      `kind: Service\nname: secondary\nendpoints: [{ address: 127.0.0.1:${portOf(secondary)} }]\n`,
      'kind: Service\nname: failover\naggregate: [primary, secondary]\n',
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ to: failover }]\n',
      // gRPC clients fail over when the first member cannot be reached.
      `kind: Service\nname: grpc-primary\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${grpcPrimaryPort} }]\n`,
      `kind: Service\nname: grpc-secondary\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${grpcSecondary.port} }]\n`,
      'kind: Service\nname: grpc-failover\naggregate: [grpc-primary, grpc-secondary]\n',
      'kind: NodeGroup\nname: grpc\nmatch: { cluster: greeter-clients }\n',
      'kind: GrpcService\nname: greeter\ntarget: greeter.internal:50051\ngroups: [grpc]\nroutes: [{ to: grpc-failover }]\n',
    ];
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'aggregate.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(...(await startEnvoys(app, (v) => httpGet(ports.get(v)!, '/').then((r) => r.status === 200))));
    client = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(app.grpcPort, 'failover-client'));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  client?.close();
  await stopAll(envoys, app);
  primary?.close();
  secondary?.close();
  await grpcPrimary?.close();
  await grpcSecondary?.close();
});

async function bodies(port: number, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await httpGet(port, '/')).body);
  return out;
}

test('Envoy: the first member takes every request while healthy, the second once it is gone, the first again on return', async () => {
  for (const v of ENVOY_VERSIONS) assert.equal(new Set(await bodies(ports.get(v)!, 10)), new Set(['primary']), v);
  primary!.closeAllConnections();
  await new Promise((r) => primary!.close(r));
  primary = undefined;
  closeIdleConnections();
  for (const v of ENVOY_VERSIONS)
    await waitFor(
      `Envoy ${v} on the second member`,
      async () => (await httpGet(ports.get(v)!, '/')).body === 'secondary',
      15_000,
    );
  for (const v of ENVOY_VERSIONS) assert.equal(new Set(await bodies(ports.get(v)!, 10)), new Set(['secondary']), v);
  primary = await httpBackend('primary', primaryPort);
  for (const v of ENVOY_VERSIONS)
    await waitFor(
      `Envoy ${v} back on the first member`,
      async () => (await httpGet(ports.get(v)!, '/')).body === 'primary',
      15_000,
    );
});

test('gRPC: RPCs go to the first member, and to the second once the first cannot be reached', async () => {
  await waitFor('first RPC', async () => (await client.sayHello('a', 5000)).backend === 'primary', 20_000);
  for (let i = 0; i < 5; i++) assert.is((await client.sayHello(`p${i}`)).backend, 'primary');
  await grpcPrimary!.close();
  grpcPrimary = undefined;
  await waitFor(
    'RPCs on the second member',
    async () => (await client.sayHello('b', 2000).catch(() => undefined))?.backend === 'secondary',
    20_000,
  );
  for (let i = 0; i < 5; i++) assert.is((await client.sayHello(`s${i}`)).backend, 'secondary');
});

test.run();
