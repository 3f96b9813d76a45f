/**
 * Real Envoy (1.40 and 1.36) reaching fleetxds over mTLS, from bootstraps `fleetxds bootstrap
 * --tls-ca --tls-cert --tls-key` printed: ADS on gRPC (two serving threads) and REST. Each Envoy
 * proves its node id with its certificate, gets its config (TLS secrets included: the transport
 * authenticates it) and routes. Then fleetxds's own certificate is renewed in place: the ADS
 * Envoys, made to reconnect by the connection age limit, shake hands again on the renewed
 * certificate and follow a route change; an Envoy started afresh on REST is served too. Last, each
 * ADS Envoy's own certificate (bootstrapped with `--tls-sds`) is renewed in place: Envoy takes it
 * without a restart, and its next connections present it (fleetxds's status shows which one). And
 * the CA they trust for fleetxds: a bundle with a new CA renamed into place, then fleetxds serving a
 * certificate of the new CA, and the ADS Envoys reconnect to it without a restart.
 */
import { X509Certificate } from 'node:crypto';
import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GRPC_XDS_CLUSTER } from '../../src/xds/xds-clusters.ts';
import {
  httpsGet,
  LAB_IDENTITY_PREFIX,
  labSpecs,
  reportSetupFailure,
  startLab,
  type Lab,
  type LabEnvoySpec,
} from '../helpers/envoy-lab.ts';
import { makePki, type CertFiles } from '../helpers/certs.ts';
import { waitFor } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

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

/** Sends all of the /split route's traffic to service `to` (a or b). */
async function splitAllTo(to: 'a' | 'b'): Promise<void> {
  const routes = lab.docs['routes.yaml'] as {
    routes: { name: string; split?: { service: string; weight: number }[] }[];
  }[];
  routes[0]!.routes[0]!.split = [
    { service: 'a', weight: to === 'a' ? 100 : 0 },
    { service: 'b', weight: to === 'b' ? 100 : 0 },
  ];
  lab.write('routes.yaml', routes);
}

/** How often Envoy's xDS cluster took a secret from its SDS files (certificate or CA). */
async function updates(s: LabEnvoySpec): Promise<number> {
  const name = `cluster.${GRPC_XDS_CLUSTER}.client_ssl_socket_factory.ssl_context_update_by_sds`;
  return Number((await lab.envoys.get(s.id)!.stats(name))[name] ?? 0);
}

/** fleetxds's certificate replaced as a CA agent writes it: each file whole, renamed into place, the certificate first. */
function serveCertificate(next: CertFiles): void {
  const { certFile, keyFile } = lab.serverCertificate!;
  copyFileSync(next.cert, `${certFile}.new`);
  renameSync(`${certFile}.new`, certFile);
  copyFileSync(next.key, `${keyFile}.new`);
  renameSync(`${keyFile}.new`, keyFile);
}

/** Waits until every ADS Envoy shook hands twice more (connections end by age): it reconnected over TLS. */
async function reconnected(what: string): Promise<void> {
  const before = await Promise.all(ads().map(handshakes));
  await waitFor(
    what,
    async () => (await Promise.all(ads().map(handshakes))).every((n, i) => n >= before[i]! + 2),
    20_000,
  );
}

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
  const renewed = lab.pki.issue('fleetxds-renewed', 'DNS:localhost,IP:127.0.0.1');
  const reloaded = () =>
    lab.server
      .output()
      .split('\n')
      .filter((l) => l.includes('listener certificate reloaded'));
  serveCertificate(renewed);
  await waitFor('gRPC and REST serving the renewed certificate', () => reloaded().length === 2, 10_000);
  assert.ok(reloaded().some((l) => l.includes('"listener":"grpc"')));
  assert.ok(reloaded().some((l) => l.includes('"listener":"rest"')));

  // The ADS Envoys reconnect (connection age) and shake hands again, now on the renewed certificate.
  await reconnected('every ADS Envoy reconnected over TLS after the renewal');
  await splitAllTo('b');
  for (const s of ads()) await lab.routesTo(s, '/split', 'B');

  // A REST Envoy started afresh: its first handshake is on the renewed certificate.
  const rest = specs.find((s) => s.mode === 'rest')!;
  await lab.envoys.get(rest.id)!.stop();
  await lab.startEnvoy(rest);
  await lab.routesTo(rest, '/split', 'B');
});

/** The fingerprint of the client certificate fleetxds saw on the connection of each of the spec's streams. */
async function presented(s: LabEnvoySpec): Promise<string[]> {
  const status = (await lab.server.admin('/api/v1/status')) as {
    nodes: { group: string; transport: string; clientCertificate?: { fingerprint: string } }[];
  };
  return status.nodes.filter((n) => n.group === s.id).map((n) => n.clientCertificate?.fingerprint ?? 'none');
}

const fingerprint = (file: string) => new X509Certificate(readFileSync(file)).fingerprint256;

test("each ADS Envoy's own certificate renewed in place (file-based SDS): its next connections present it", async () => {
  const renewed = new Map<string, string>();
  for (const s of ads()) {
    const current = lab.clientCertificates.get(s.id)!;
    // Its streams may be reconnecting (connections end by age): wait until the status lists them.
    let seen: string[] = [];
    await waitFor(`${s.id} connected`, async () => (seen = await presented(s)).length > 0, 20_000);
    assert.equal([...new Set(seen)], [fingerprint(current.cert)], `${s.id}: status shows its certificate`);
    const before = await updates(s);
    const next = lab.pki.issue(`${s.id}-client-renewed`, `URI:${LAB_IDENTITY_PREFIX}node/${s.id}-*`);
    // As a CA agent writes them: each file whole, renamed into place (the pair is read again on each).
    copyFileSync(next.cert, `${current.cert}.new`);
    renameSync(`${current.cert}.new`, current.cert);
    copyFileSync(next.key, `${current.key}.new`);
    renameSync(`${current.key}.new`, current.key);
    renewed.set(s.id, fingerprint(next.cert));
    await waitFor(`${s.id} took the renewed certificate`, async () => (await updates(s)) > before, 10_000);
  }
  // Connections end by age: each reconnects, shaking hands with the renewed certificate.
  for (const s of ads())
    await waitFor(
      `${s.id} presents its renewed certificate to fleetxds`,
      async () => {
        const seen = await presented(s);
        return seen.length > 0 && seen.every((f) => f === renewed.get(s.id));
      },
      20_000,
    );
  await splitAllTo('a');
  for (const s of ads()) await lab.routesTo(s, '/split', 'A');
});

test('the CA the ADS Envoys trust for fleetxds renewed in place (file-based SDS): they reconnect to a new CA', async () => {
  const next = makePki(tempDir(), 'next-ca');
  const before = await Promise.all(ads().map(updates));
  // The bundle first (the old CA and the new one), renamed into place as a CA agent would.
  writeFileSync(`${lab.pki.caCert}.new`, lab.pki.caPem + next.caPem);
  renameSync(`${lab.pki.caCert}.new`, lab.pki.caCert);
  for (const [i, s] of ads().entries())
    await waitFor(`${s.id} took the CA bundle`, async () => (await updates(s)) > before[i]!, 10_000);
  // Then fleetxds serves a certificate of the new CA: only a proxy that trusts it can reconnect.
  serveCertificate(next.issue('fleetxds-next-ca', 'DNS:localhost,IP:127.0.0.1'));
  await waitFor('fleetxds serving the new CA', () => lab.server.output().includes('fleetxds-next-ca'), 10_000);
  await reconnected('every ADS Envoy reconnected to the certificate of the new CA');
  await splitAllTo('b');
  for (const s of ads()) await lab.routesTo(s, '/split', 'B');
});

test.run();
