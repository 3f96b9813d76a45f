/**
 * Real Envoy 1.40 and 1.36 whose cluster for fleetxds is named as operators name theirs: with a
 * port (`xds.example.com:21002`), with an `@` (`rest@dc1`) or a space (`rest dc1`), or reached over per-type gRPC with
 * `envoy_grpc.authority` set to another name. Served clusters and listeners must name that very
 * cluster in their config sources, or Envoy rejects every EDS cluster and RDS listener. The name
 * comes from the node's metadata where the bootstrap states it, else from Host / :authority.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure, startLab, type Lab, type LabEnvoySpec, type LabMode } from '../helpers/envoy-lab.ts';

let lab: Lab;
const specs: LabEnvoySpec[] = [];

async function spec(
  id: string,
  mode: LabMode,
  version: EnvoyVersion,
  xdsCluster: LabEnvoySpec['xdsCluster'],
): Promise<LabEnvoySpec> {
  return { id, mode, version, httpPort: await freePort(), httpsPort: await freePort(), xdsCluster };
}

test.before(async () => {
  specs.push(
    await spec('rest-port', 'rest-legacy', '1.40', { name: 'xds.example.com:21002' }),
    await spec('rest-at', 'rest-legacy', '1.36', { name: 'rest@dc1' }),
    await spec('rest-stated', 'rest', '1.40', { name: 'rest@dc1', stated: true }),
    await spec('legacy-spaced', 'rest-legacy', '1.40', { name: 'rest dc1' }),
    await spec('stated-spaced', 'rest', '1.36', { name: 'rest dc1', stated: true }),
    await spec('grpc-auth', 'per-type', '1.40', {
      name: 'cp.example.com:21000',
      authority: 'fleetxds.example.com',
      stated: true,
    }),
    await spec('delta-auth', 'per-type-delta', '1.36', {
      name: 'cp.example.com:21000',
      authority: 'fleetxds.example.com',
      stated: true,
    }),
    await spec('grpc-port', 'per-type', '1.36', { name: 'cp.example.com:21000' }),
  );
  lab = await startLab(specs);
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
});

test.after(async () => {
  await lab?.stop();
});

test('every Envoy routes through clusters whose endpoints come over its own named cluster, and rejects nothing', async () => {
  for (const s of specs) await lab.routesTo(s, '/ep', 'A');
  for (const s of specs) {
    const envoy = lab.envoys.get(s.id)!;
    assert.is(await envoy.rejected(), 0, `${s.id}: update_rejected\n${envoy.log().slice(-2000)}`);
  }
});

test('an endpoint change reaches each of them over that cluster', async () => {
  const services = lab.docs['services.yaml'] as any[];
  services.find((d) => d.name === 'ep').endpoints = [{ address: `127.0.0.1:${lab.backends.B!.port}` }];
  lab.write('services.yaml', services);
  await Promise.all(specs.map((s) => lab.routesTo(s, '/ep', 'B')));
  for (const s of specs) assert.is(await lab.envoys.get(s.id)!.rejected(), 0, s.id);
});

test.run();
