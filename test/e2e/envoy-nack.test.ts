/**
 * A NACK from real Envoy. What it rejects: a cluster whose upstream TLS trusts a CA file that does
 * not exist on the proxy host. fleetxds cannot know the proxy's file system, so its validator lets
 * this through (no test-only bypass needed); Envoy refuses the cluster. Over ADS the NACK carries
 * Envoy's own text; over REST it is inferred. Either way it is recorded, shown in the status the
 * page renders, not sent again, and the proxy keeps routing with its last good config.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { labSpecs, reportSetupFailure, startLab, type Lab, type LabEnvoySpec } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

const CDS = TypeUrls.cluster;
let lab: Lab;
let specs: LabEnvoySpec[];

test.before(async () => {
  specs = await labSpecs([
    ['ads', '1.40'],
    ['rest', '1.40'],
    ['ads', '1.36'],
  ]);
  lab = await startLab(specs);
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
  for (const s of specs) await lab.routesTo(s, '/split', 'A');
});

test.after(async () => {
  await lab?.stop();
});

test('Envoy NACKs a cluster: recorded with its text, on the status page, not sent again, traffic keeps flowing', async () => {
  const services = lab.docs['services.yaml'] as any[];
  const good = (await lab.server.admin('/api/v1/config')).groups[specs[0]!.id].cluster.version;
  services.find((d) => d.name === 'a').tls = { sni: 'a.internal', caFile: '/nonexistent/fleetxds-test-ca.pem' };
  lab.write('services.yaml', services);
  const cfg = await waitFor('the new version applied', async () => {
    const c = await lab.server.admin('/api/v1/config');
    return c.groups[specs[0]!.id].cluster.version !== good && c;
  });
  for (const s of specs) {
    const envoy = lab.envoys.get(s.id)!;
    await waitFor(
      `${s.id} rejects the cluster`,
      async () =>
        Number((await envoy.stats('cluster_manager.cds.update_rejected$'))['cluster_manager.cds.update_rejected']) >= 1,
    );
    const node = await waitFor(`${s.id}: NACK recorded`, async () => {
      const n = await lab.server.admin(`/api/v1/nodes/${s.id}-1`);
      return n.nacks.length > 0 && n;
    });
    const nack = node.nacks[0];
    assert.is(nack.typeUrl, CDS);
    assert.is(nack.version, cfg.groups[s.id].cluster.version, 'the rejected version');
    if (s.mode === 'ads') assert.match(nack.message, /fleetxds-test-ca\.pem/, `Envoy's own text: ${nack.message}`);
    else assert.match(nack.message, /inferred/);
    const status = await lab.server.admin('/api/v1/status');
    const shown = status.nodes.find((n: any) => n.nodeId === `${s.id}-1`);
    assert.ok(shown.lastNack, `${s.id}: the status page shows the NACK`);
    assert.is(shown.lastNack.message, nack.message);
    const row = status.rollout.find((r: any) => r.group === s.id && r.typeUrl === CDS);
    assert.is(row.nacked, 1);
  }
  // Not sent again: a later change reaches every proxy (a route, so the clusters it refused stay
  // what fleetxds serves), and by the time each has taken it the refused clusters were not resent.
  const before = await Promise.all(
    specs.map(async (s) =>
      Number(
        (await lab.envoys.get(s.id)!.stats('cluster_manager.cds.update_rejected$'))[
          'cluster_manager.cds.update_rejected'
        ],
      ),
    ),
  );
  const routes = lab.docs['routes.yaml'] as any[];
  routes[0].routes.push({ name: 'later', match: { prefix: '/later' }, to: 'b' });
  lab.write('routes.yaml', routes);
  const RDS = TypeUrls.route;
  const later = await waitFor('the later route version', async () => {
    const c = await lab.server.admin('/api/v1/config');
    return c.groups[specs[0]!.id].route.version !== cfg.groups[specs[0]!.id].route.version && c;
  });
  await waitFor('every proxy took the later route change', async () => {
    const nodes = await lab.server.admin('/api/v1/nodes');
    return specs.every((s) =>
      [...nodes.connected, ...nodes.polling].some(
        (n: any) => n.nodeId === `${s.id}-1` && n.types[RDS]?.ackedVersion === later.groups[s.id].route.version,
      ),
    );
  });
  for (const [i, s] of specs.entries()) {
    const envoy = lab.envoys.get(s.id)!;
    const after = Number(
      (await envoy.stats('cluster_manager.cds.update_rejected$'))['cluster_manager.cds.update_rejected'],
    );
    assert.is(after, before[i], `${s.id}: the rejected version was not sent again`);
    await lab.routesTo(s, '/split', 'A');
    const n = await lab.server.admin(`/api/v1/nodes/${s.id}-1`);
    assert.is(n.nacks.length, 1, `${s.id}: recorded once`);
  }
  // The operator fixes it: the next version is accepted everywhere.
  delete services.find((d) => d.name === 'a').tls;
  services.find((d) => d.name === 'a').connectTimeout = '2s';
  lab.write('services.yaml', services);
  await waitFor('every proxy ACKed the fix', async () => {
    const c = await lab.server.admin('/api/v1/config');
    const nodes = await lab.server.admin('/api/v1/nodes');
    return specs.every((s) =>
      [...nodes.connected, ...nodes.polling].some(
        (n: any) => n.nodeId === `${s.id}-1` && n.types[CDS]?.ackedVersion === c.groups[s.id].cluster.version,
      ),
    );
  });
});

test.run();
