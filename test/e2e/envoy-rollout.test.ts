/**
 * Staged rollouts with real Envoy: three proxies, one per stage (canary: ADS 1.40; wave: delta
 * 1.40; rest: REST 1.40). A good version reaches the canary first, then the wave when the canary's
 * soak is promoted from the CLI, then the rest when the wave's gates hold; proxies restarted
 * mid-rollout get their stage's version. A version the canary NACKs halts the rollout with
 * Envoy's text while the others keep routing on the previous version; `rollout abort` from the
 * CLI serves the previous version to the canary again.
 */
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { labSpecs, reportSetupFailure, startLab, type Lab, type LabEnvoySpec } from '../helpers/envoy-lab.ts';
import { waitFor, runCli } from '../helpers/process.ts';

let lab: Lab;
let canary: LabEnvoySpec;
let wave: LabEnvoySpec;
let rest: LabEnvoySpec;

const cli = (...args: string[]) =>
  runCli([...args, '--config', join(lab.root, 'fleetxds.yaml')], {
    FLEETXDS_ADMIN_LISTEN: `127.0.0.1:${lab.server.adminPort}`,
  });

test.before(async () => {
  [canary, wave, rest] = (await labSpecs([
    ['ads', '1.40'],
    ['delta', '1.40'],
    ['rest', '1.40'],
  ])) as [LabEnvoySpec, LabEnvoySpec, LabEnvoySpec];
  lab = await startLab([canary, wave, rest]);
  await Promise.all(lab.specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
  for (const s of lab.specs) await lab.routesTo(s, '/split', 'A');
  lab.write('rollout.yaml', [
    {
      kind: 'Rollout',
      name: 'staged',
      // The lab's Envoys connect without client certificates: the rollout must count them.
      acceptUnauthenticatedNodes: true,
      stages: [
        { name: 'canary', select: { groups: [canary.id] }, gates: { soak: '10m' } },
        { name: 'wave', select: { groups: [wave.id] }, gates: { soak: '1s' } },
      ],
    },
  ]);
  // The policy alone changes nothing served: no rollout.
  await waitFor('the policy applied', async () => {
    const h = await lab.server.admin('/api/v1/versions');
    return h.versions.length >= 2;
  });
});

test.after(async () => {
  await lab?.stop();
});

const splitTo = (service: 'a' | 'b') => {
  const routes = lab.docs['routes.yaml'] as any[];
  routes[0].routes[0].split = [
    { service: 'a', weight: service === 'a' ? 100 : 0 },
    { service: 'b', weight: service === 'b' ? 100 : 0 },
  ];
  lab.write('routes.yaml', routes);
};

/** The route stays on `backend` for a while (checked repeatedly). */
async function staysOn(spec: LabEnvoySpec, backend: string, ms = 1500): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await lab.routesTo(spec, '/split', backend, 3);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a good version goes stage by stage: canary, then (promoted from the CLI) the wave, then the rest by its gates', async () => {
  splitTo('b');
  await lab.routesTo(canary, '/split', 'B');
  await staysOn(wave, 'A');
  await staysOn(rest, 'A', 500);
  const status = cli('rollout', 'status');
  assert.is(status.status, 0, status.stderr);
  assert.match(status.stdout, /rollout #\d+: progressing, version \d+ -> \d+, stage canary/);
  assert.match(status.stdout, /canary: 1 node on version \d+, 1 ACKed, soaking/);
  assert.match(status.stdout, /rest: 1 node on version \d+/);

  // Proxies restarted mid-rollout get their stage's version.
  await lab.envoys.get(canary.id)!.stop();
  await lab.envoys.get(rest.id)!.stop();
  await lab.startEnvoy(canary);
  await lab.startEnvoy(rest);
  await lab.routesTo(canary, '/split', 'B');
  await staysOn(rest, 'A', 800);

  // Halt and resume, then promote the canary's soak away: the wave follows, then the rest.
  assert.is(cli('rollout', 'halt').status, 0);
  assert.match(cli('rollout', 'status').stdout, /halted \(manual\)/);
  assert.is(cli('rollout', 'resume').status, 0);
  const promoted = cli('rollout', 'promote');
  assert.is(promoted.status, 0, promoted.stderr);
  assert.match(promoted.stdout, /^promote: done\nrollout #\d+: progressing, version \d+ -> \d+, stage wave/);
  await lab.routesTo(wave, '/split', 'B');
  await lab.routesTo(rest, '/split', 'B');
  const done = await waitFor('complete', async () => {
    const r = await lab.server.admin('/api/v1/rollout');
    return r.last?.status === 'complete' && r;
  });
  assert.is(done.rollout, null);
  const after = cli('rollout', 'status').stdout;
  assert.match(after, /^rollout #\d+: complete, version \d+ -> \d+/);
  assert.not.match(after, /no rollout/);
  const audit = (await lab.server.admin('/api/v1/audit')).audit.map((a: any) => a.action);
  for (const a of ['rollout-start', 'rollout-halt', 'rollout-resume', 'rollout-promote', 'rollout-complete'])
    assert.ok(audit.includes(a), `audit has ${a}: ${audit.join(', ')}`);
});

test('a version the canary NACKs halts at the canary; the others keep routing on the previous one; abort', async () => {
  const services = lab.docs['services.yaml'] as any[];
  services.find((d) => d.name === 'b').tls = { sni: 'b.internal', caFile: '/nonexistent/fleetxds-rollout-ca.pem' };
  lab.write('services.yaml', services);
  const halted = await waitFor(
    'halted by the canary',
    async () => {
      const r = await lab.server.admin('/api/v1/rollout');
      return r.rollout?.status === 'halted' && r.rollout;
    },
    20_000,
  );
  assert.is(halted.halt.reason, 'nack');
  assert.is(halted.halt.nodeId, `${canary.id}-1`);
  assert.match(halted.halt.message, /fleetxds-rollout-ca\.pem/, `Envoy's text: ${halted.halt.message}`);
  const rejected = async (s: LabEnvoySpec) =>
    Number(
      (await lab.envoys.get(s.id)!.stats('cluster_manager.cds.update_rejected$'))[
        'cluster_manager.cds.update_rejected'
      ],
    );
  // The wave and the rest never get the version: nothing to reject, and they keep routing.
  await staysOn(wave, 'B', 2500);
  await staysOn(rest, 'B', 500);
  assert.is(await rejected(wave), 0);
  assert.is(await rejected(rest), 0);
  const page = await lab.server.admin('/api/v1/status');
  assert.is(page.staged.rollout.status, 'halted');
  assert.match(page.staged.rollout.halt.message, /fleetxds-rollout-ca\.pem/);

  const abort = cli('rollout', 'abort');
  assert.is(abort.status, 0, abort.stderr);
  await waitFor('the canary is back on the previous version', async () => {
    const nodes = await lab.server.admin(`/api/v1/nodes/${canary.id}-1`);
    const cfg = await lab.server.admin('/api/v1/config');
    const cds = nodes.streams?.[0]?.types?.['type.googleapis.com/envoy.config.cluster.v3.Cluster'];
    return cds?.ackedVersion === cfg.groups[canary.id].cluster.version;
  });
  await lab.routesTo(canary, '/split', 'B');
  const versions = await lab.server.admin('/api/v1/versions');
  assert.is(versions.versions[0].sourceKind, 'rollback');
  assert.match(cli('rollout', 'status').stdout, /aborted/);
});

test.run();
