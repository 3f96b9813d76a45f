/**
 * Zero-drop changes through real Envoy (SotW ADS and delta ADS): a steady stream of requests runs
 * while (a) a split changes, (b) a service is added with a route to it, (c) that service is
 * removed while its route moves to another service in the same change. Every request must
 * succeed: the proof of make-before-break ordering (clusters and endpoints before the routes that
 * use them; a removed cluster only after no route uses it).
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

let lab: Lab;
let specs: LabEnvoySpec[];

test.before(async () => {
  specs = await labSpecs([
    ['ads', '1.40'],
    ['delta', '1.40'],
  ]);
  lab = await startLab(specs);
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
  for (const s of specs) await lab.routesTo(s, '/split', 'A');
});

test.after(async () => {
  await lab?.stop();
});

test('a split change, an added service, and a removed service whose route moves: no request fails', async () => {
  const services = lab.docs['services.yaml'] as any[];
  const routes = lab.docs['routes.yaml'] as any[];
  const vh = routes[0];
  const load = steadyLoad(specs, ['/split', '/ep']);
  await new Promise((r) => setTimeout(r, 500));

  // (a) split 100/0 -> 50/50 -> 0/100
  vh.routes[0].split = [
    { service: 'a', weight: 50 },
    { service: 'b', weight: 50 },
  ];
  lab.write('routes.yaml', routes);
  await new Promise((r) => setTimeout(r, 800));
  vh.routes[0].split = [
    { service: 'a', weight: 0 },
    { service: 'b', weight: 100 },
  ];
  lab.write('routes.yaml', routes);
  for (const s of specs) await lab.routesTo(s, '/split', 'B');

  // (b) a new service and a route to it; then it joins the load
  services.push({ kind: 'Service', name: 'c', endpoints: [{ address: `127.0.0.1:${lab.backends.C!.port}` }] });
  vh.routes.unshift({ name: 'c', match: { prefix: '/c' }, to: 'c' });
  lab.write('services.yaml', services);
  lab.write('routes.yaml', routes);
  for (const s of specs) await lab.routesTo(s, '/c', 'C');
  load.paths.push('/c');
  await new Promise((r) => setTimeout(r, 800));

  // (c) remove service c and move its route to a, in one change
  services.splice(
    services.findIndex((d) => d.name === 'c'),
    1,
  );
  vh.routes[0].to = 'a';
  lab.write('services.yaml', services);
  lab.write('routes.yaml', routes);
  for (const s of specs) await lab.routesTo(s, '/c', 'A');
  await new Promise((r) => setTimeout(r, 1000));
  await load.stop();

  console.log(`zero-drop: ${load.sent} requests through ${specs.length} Envoys, ${load.failed} failed`);
  assert.ok(load.sent > 500, `enough load: ${load.sent}`);
  assert.is(load.failed, 0, load.failures.join('\n'));
  const versions = (await lab.server.admin('/api/v1/versions')).versions;
  assert.ok(versions.length >= 5, 'each step was applied as its own version');
  for (const s of specs) assert.is(await lab.envoys.get(s.id)!.rejected(), 0);
});

test.run();
