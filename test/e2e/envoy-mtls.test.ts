/**
 * Real Envoy (1.40 and 1.36) reaching fleetxds over mTLS, from bootstraps `fleetxds bootstrap
 * --tls-ca --tls-cert --tls-key` printed: ADS on gRPC (two serving threads) and REST. Each Envoy
 * proves its node id with its certificate, gets its config (TLS secrets included: the transport
 * authenticates it) and routes. Then fleetxds's own certificate is renewed in place: the ADS
 * Envoys, made to reconnect by the connection age limit, shake hands again on the renewed
 * certificate and follow a route change; an Envoy started afresh on REST is served too.
 */
import { copyFileSync, renameSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GRPC_XDS_CLUSTER } from '../../src/bootstrap/config-source.ts';
import { httpsGet, labSpecs, reportSetupFailure, startLab, type Lab, type LabEnvoySpec } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';

let lab: Lab;
let specs: LabEnvoySpec[];

test.before(async () => {
  specs = await labSpecs([
    ['ads', '1.40'],
    ['ads', '1.36'],
    ['rest', '1.40'],
  ]);
  lab = await startLab(specs, {
    controlPlaneTls: true,
    // Connections end after about 3 s (GOAWAY, then 1 s of grace): the Envoys reconnect, with a new handshake.
    settings: {
      grpc: { listen: '127.0.0.1:0', threads: 2, maxConnectionAgeMs: 3000, maxConnectionAgeGraceMs: 1000 },
    },
  });
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
});

test.after(async () => {
  await lab?.stop();
});

const ads = () => specs.filter((s) => s.mode === 'ads');

/** TLS handshakes Envoy made with fleetxds on its xDS cluster. */
async function handshakes(s: LabEnvoySpec): Promise<number> {
  const stats = await lab.envoys.get(s.id)!.stats(`cluster.${GRPC_XDS_CLUSTER}.ssl.handshake`);
  return Number(stats[`cluster.${GRPC_XDS_CLUSTER}.ssl.handshake`] ?? 0);
}

test('Envoys on mTLS bootstraps get their config, TLS secrets included, and route', async () => {
  for (const s of specs) {
    await lab.routesTo(s, '/split', 'A');
    const shop = await httpsGet(s.httpsPort, '/ep', 'shop.test', lab.pki.caPem);
    assert.is(shop.status, 200, `${s.id}: the certificate came over SDS`);
    assert.is(shop.peerCn, 'shop');
  }
  for (const s of ads()) assert.ok((await handshakes(s)) >= 1, `${s.id} shook hands over TLS`);
});

test("fleetxds's certificate renewed in place: reconnecting and new Envoys are served on it", async () => {
  const { certFile, keyFile } = lab.serverCertificate!;
  const renewed = lab.pki.issue('fleetxds-renewed', 'DNS:localhost,IP:127.0.0.1');
  const reloaded = () =>
    lab.server
      .output()
      .split('\n')
      .filter((l) => l.includes('listener certificate reloaded'));
  // As a CA agent writes it: each file whole, renamed into place, the certificate first.
  copyFileSync(renewed.cert, `${certFile}.new`);
  renameSync(`${certFile}.new`, certFile);
  copyFileSync(renewed.key, `${keyFile}.new`);
  renameSync(`${keyFile}.new`, keyFile);
  await waitFor('gRPC and REST serving the renewed certificate', () => reloaded().length === 2, 10_000);
  assert.ok(reloaded().some((l) => l.includes('"listener":"grpc"')));
  assert.ok(reloaded().some((l) => l.includes('"listener":"rest"')));

  // The ADS Envoys reconnect (connection age) and shake hands again, now on the renewed certificate.
  const before = await Promise.all(ads().map(handshakes));
  await waitFor(
    'every ADS Envoy reconnected over TLS after the renewal',
    async () => (await Promise.all(ads().map(handshakes))).every((n, i) => n >= before[i]! + 2),
    20_000,
  );
  const routes = lab.docs['routes.yaml'] as {
    routes: { name: string; split?: { service: string; weight: number }[] }[];
  }[];
  routes[0]!.routes[0]!.split = [
    { service: 'a', weight: 0 },
    { service: 'b', weight: 100 },
  ];
  lab.write('routes.yaml', routes);
  for (const s of ads()) await lab.routesTo(s, '/split', 'B');

  // A REST Envoy started afresh: its first handshake is on the renewed certificate.
  const rest = specs.find((s) => s.mode === 'rest')!;
  await lab.envoys.get(rest.id)!.stop();
  await lab.startEnvoy(rest);
  await lab.routesTo(rest, '/split', 'B');
});

test.run();
