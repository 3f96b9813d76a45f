/**
 * A route moved to a cluster that the same change creates, through real Envoy 1.40 and 1.36 on
 * SotW and delta ADS, with Envoy's requests reaching the server 200 ms late (a slow or loaded
 * link). Envoy asks for a new cluster's endpoints only after it applied the CDS response, so a
 * route pushed right after CDS would name a cluster still warming and get 503s for that whole
 * round trip. The server holds the route until it has sent the endpoints: no request may fail.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  labSpecs,
  reportSetupFailure,
  startLab,
  steadyLoad,
  type Lab,
  type LabEnvoySpec,
} from '../helpers/envoy-lab.ts';

const UPLINK_DELAY_MS = 200;
let lab: Lab;
let specs: LabEnvoySpec[];

test.before(async () => {
  specs = await labSpecs([
    ['ads', '1.40'],
    ['delta', '1.40'],
    ['ads', '1.36'],
    ['delta', '1.36'],
  ]);
  for (const s of specs) s.uplinkDelayMs = UPLINK_DELAY_MS;
  lab = await startLab(specs, { settings: { watch: { enabled: true, debounceMs: 200, maxWaitMs: 1000 } } });
  (lab.docs['services.yaml'] as any[]).push({
    kind: 'Service',
    name: 'fa',
    endpoints: [{ address: `127.0.0.1:${lab.backends.A!.port}` }],
  });
  (lab.docs['routes.yaml'] as any[])[0].routes.unshift({ name: 'moving', match: { prefix: '/m' }, to: 'fa' });
  lab.write('services.yaml', lab.docs['services.yaml']!);
  lab.write('routes.yaml', lab.docs['routes.yaml']!);
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
  for (const s of specs) await lab.routesTo(s, '/m', 'A');
});

test.after(async () => {
  await lab?.stop();
});

async function holds(): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${lab.server.adminPort}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^fleetxds_warming_holds_total\{outcome="(\w+)"\} (\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

test('a route moved to a cluster created by the same change: no request fails', async () => {
  const services = lab.docs['services.yaml'] as any[];
  const routes = lab.docs['routes.yaml'] as any[];
  const versionsBefore = (await lab.server.admin('/api/v1/versions')).versions.length;
  const load = steadyLoad(specs, ['/m']);
  await new Promise((r) => setTimeout(r, 500));

  // One change: service fa goes, fb comes, and the route moves from fa to fb.
  const fa = services.findIndex((d) => d.name === 'fa');
  services.splice(fa, 1, {
    kind: 'Service',
    name: 'fb',
    endpoints: [{ address: `127.0.0.1:${lab.backends.B!.port}` }],
  });
  routes[0].routes[0].to = 'fb';
  lab.write('services.yaml', services);
  lab.write('routes.yaml', routes);
  for (const s of specs) await lab.routesTo(s, '/m', 'B');
  await new Promise((r) => setTimeout(r, 500));
  await load.stop();

  console.log(`warming: ${load.sent} requests through ${specs.length} Envoys, ${load.failed} failed`);
  assert.ok(load.sent > 200, `enough load: ${load.sent}`);
  assert.is(load.failed, 0, load.failures.join('\n'));
  const versions = (await lab.server.admin('/api/v1/versions')).versions;
  assert.is(versions.length, versionsBefore + 1, 'the move was applied as one version');
  // Every stream waited, and each got its endpoints in time (none sent its routes after the limit).
  const counted = await holds();
  assert.ok((counted.delivered ?? 0) >= specs.length, JSON.stringify(counted));
  assert.is(counted.expired ?? 0, 0, JSON.stringify(counted));
  for (const s of specs) {
    const e = lab.envoys.get(s.id)!;
    assert.is(await e.rejected(), 0, `${s.id} rejected nothing`);
  }
});

test.run();
