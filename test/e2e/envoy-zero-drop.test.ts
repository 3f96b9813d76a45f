/**
 * Zero-drop changes through real Envoy (SotW ADS and delta ADS): a steady stream of requests runs
 * while (a) a split changes, (b) a service is added with a route to it, (c) that service is
 * removed while its route moves to another service in the same change. Every request must
 * succeed: the proof of make-before-break ordering (clusters and endpoints before the routes that
 * use them; a removed cluster only after no route uses it). Then the HTTP listeners take on every
 * edge protection at once (access rules, JWT, external authorization, local and global rate
 * limits, against real authorization and rate-limit servers) and change their rules twice, under
 * the same load: still no request fails.
 */
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../helpers/process.ts';
import {
  closeIdleConnections,
  httpGet,
  labSpecs,
  reportSetupFailure,
  startLab,
  steadyLoad,
  type Lab,
  type LabEnvoySpec,
} from '../helpers/envoy-lab.ts';
import { startAuthorizationServer, startRateLimitServer, type GrpcTestServer } from '../helpers/envoy-services.ts';

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
  for (const s of helpers) await s.close();
});

const helpers: GrpcTestServer[] = [];

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

test('every protection on the listeners, their rules changed twice under load: no request fails', async () => {
  const authz = await startAuthorizationServer(() => ({ allow: true, add: { 'x-checked': 'yes' } }));
  const rls = await startRateLimitServer(() => 'OK');
  helpers.push(authz, rls);
  const services = lab.docs['services.yaml'] as any[];
  const routes = lab.docs['routes.yaml'] as any[];
  const listeners = lab.docs['listeners.yaml'] as any[];
  services.push(
    { kind: 'Service', name: 'authz', protocol: 'grpc', endpoints: [{ address: `127.0.0.1:${authz.port}` }] },
    { kind: 'Service', name: 'rls', protocol: 'grpc', endpoints: [{ address: `127.0.0.1:${rls.port}` }] },
  );
  const jwks = JSON.stringify({
    keys: [{ ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }), kid: 'k1' }],
  });
  const protect = (deny: string, requests: number, timeout: string) => {
    for (const l of listeners) {
      l.access = { allow: ['127.0.0.0/8'], deny: [deny] };
      // Optional: the load sends no token, and a token it sent would still be checked.
      l.jwt = { providers: [{ name: 'corp', keys: { inline: jwks } }], require: ['corp'], optional: true };
      l.extAuth = { service: 'authz', timeout };
      l.rateLimit = { requests, per: '1s' };
      l.rateLimitService = { service: 'rls', domain: 'lab', timeout };
    }
  };
  const vh = routes[0];
  vh.globalRateLimit = [[{ clientAddress: true }]];
  protect('10.0.0.0/8', 100000, '1s');
  lab.write('services.yaml', services);
  lab.write('listeners.yaml', listeners);
  lab.write('routes.yaml', routes);
  // Applied on an Envoy once a request through it is checked by both servers.
  await waitFor(
    'every Envoy calls the authorization and rate-limit servers',
    async () => {
      for (const s of specs) {
        const [a, r] = [authz.calls, rls.calls];
        closeIdleConnections();
        await httpGet(s.httpPort, '/ep').catch(() => undefined);
        if (authz.calls === a || rls.calls === r) return false;
      }
      return true;
    },
    20_000,
  );

  // Connections kept alive from before carry the listener they were accepted with until they drain.
  closeIdleConnections();
  const before = { authz: authz.calls, rls: rls.calls };
  const load = steadyLoad(specs, ['/split', '/ep', '/c']);
  await new Promise((r) => setTimeout(r, 800));
  protect('10.1.0.0/16', 50000, '2s');
  lab.write('listeners.yaml', listeners);
  await new Promise((r) => setTimeout(r, 1500));
  vh.globalRateLimit = [[{ generic: { key: 'site', value: 'shop' } }, { clientAddress: true }]];
  protect('192.0.2.0/24', 80000, '1500ms');
  lab.write('listeners.yaml', listeners);
  lab.write('routes.yaml', routes);
  await new Promise((r) => setTimeout(r, 1500));
  await load.stop();

  console.log(`zero-drop (protected): ${load.sent} requests through ${specs.length} Envoys, ${load.failed} failed`);
  assert.ok(load.sent > 500, `enough load: ${load.sent}`);
  assert.is(load.failed, 0, load.failures.join('\n'));
  assert.ok(
    authz.calls - before.authz >= load.sent,
    `every request was authorized: ${authz.calls - before.authz} of ${load.sent}`,
  );
  assert.ok(rls.calls > before.rls, 'the rate-limit service was asked');
  assert.ok(rls.requests.some((r) => r.descriptors.some((d) => d.entries.some((e) => e.key === 'site'))));
  for (const s of specs) assert.is(await lab.envoys.get(s.id)!.rejected(), 0);
});

test.run();
