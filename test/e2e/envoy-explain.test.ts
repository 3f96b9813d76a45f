/**
 * "Why is this proxy on that version", asked of real Envoy 1.40 and 1.36 on ADS: in sync with the
 * newest version; held at an older one by an operator's pin (with who pinned it), while the other
 * group moves on; refusing a cluster (the NACK and Envoy's own text); `fleetxds explain` prints the
 * same answer as the API.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { labSpecs, reportSetupFailure, startLab, type Lab, type LabEnvoySpec } from '../helpers/envoy-lab.ts';
import { runCli, waitFor } from '../helpers/process.ts';

let lab: Lab;
let specs: LabEnvoySpec[];

test.before(async () => {
  specs = await labSpecs([
    ['ads', '1.40'],
    ['ads', '1.36'],
  ]);
  lab = await startLab(specs);
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
  for (const s of specs) await lab.routesTo(s, '/split', 'A');
});

test.after(async () => {
  await lab?.stop();
});

const explain = (s: LabEnvoySpec) => lab.server.admin(`/api/v1/nodes/${s.id}-1/explain`);
const typeOf = (e: any, kind: string) => e.types.find((t: any) => t.type === kind);
/** Waits until every type the Envoy holds is in sync with what it is served. */
const settled = (s: LabEnvoySpec) =>
  waitFor(`${s.id}: every type in sync`, async () => {
    const e = await explain(s);
    return ['cluster', 'endpoint', 'listener', 'route'].every((k) => typeOf(e, k).state === 'in sync') && e;
  });

test('in sync: each type holds the newest version, nothing held back', async () => {
  for (const s of specs) {
    const e = await settled(s);
    assert.is(e.group, s.id);
    assert.ok(e.connected);
    assert.equal(e.transports, ['grpc-ads']);
    // The lab's HTTPS listener takes its certificates over SDS: every type is served.
    for (const kind of ['cluster', 'endpoint', 'listener', 'route', 'secret']) {
      const t = typeOf(e, kind);
      assert.is(t.state, 'in sync', `${s.id} ${kind}: ${t.summary}`);
      assert.equal(t.rules, [], `${s.id} ${kind}: ${t.summary}`);
      assert.is(t.ackedVersion, t.newest.version);
    }
  }
});

test('a pin holds one group at an older version while the other moves on; the explanation names it', async () => {
  const [moves, pinned] = specs as [LabEnvoySpec, LabEnvoySpec];
  const before = (await lab.server.admin('/api/v1/versions')).current;
  await fetch(`http://127.0.0.1:${lab.server.adminPort}/api/v1/pins/${pinned.id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ versionId: before, actor: 'alice' }),
  });
  const services = lab.docs['services.yaml'] as any[];
  services.find((d) => d.name === 'a').connectTimeout = '3s';
  lab.write('services.yaml', services);
  await waitFor('a new version', async () => (await lab.server.admin('/api/v1/versions')).current > before);
  const e = await waitFor(`${moves.id} holds the new clusters`, async () => {
    const x = await explain(moves);
    const c = typeOf(x, 'cluster');
    return c.state === 'in sync' && c.ackedVersion === c.newest.version && x;
  });
  assert.ok(typeOf(e, 'cluster').newest.versionId > before);
  const p = await settled(pinned);
  const c = typeOf(p, 'cluster');
  assert.is.not(c.newest.version, c.served.version, 'the pinned group is served another cluster version');
  assert.is(c.served.versionId, before);
  assert.equal(
    c.rules.map((r: any) => r.rule),
    ['pin'],
  );
  assert.is(c.rules[0].actor, 'alice');
  assert.is(c.ackedVersion, c.served.version, 'Envoy holds the pinned version');
  // What is the same in both versions needs no explanation.
  assert.equal(typeOf(p, 'listener').rules, []);

  // The command line says the same.
  const settings = join(lab.root, 'cli.yaml');
  writeFileSync(
    settings,
    `configDir: services\ndatabase: unused.db\ngrpc: { listen: 127.0.0.1:1 }\n` +
      `admin: { listen: 127.0.0.1:${lab.server.adminPort} }\n`,
  );
  const out = runCli(['explain', `${pinned.id}-1`, '--type', 'cluster', '--config', settings]);
  assert.is(out.status, 0, out.stderr);
  assert.match(out.stdout, new RegExp(`cluster +in sync .*pinned to version ${before} \\(by alice`));
  const refused = runCli(['explain', 'nobody', '--config', settings]);
  assert.is(refused.status, 1);
  assert.match(refused.stderr, /not connected to this replica/);

  await fetch(`http://127.0.0.1:${lab.server.adminPort}/api/v1/pins/${pinned.id}`, { method: 'DELETE' });
  const after = await settled(pinned);
  assert.equal(typeOf(after, 'cluster').rules, [], 'unpinned: the newest version again');
});

test('a refused cluster: the NACK and Envoy’s text explain why the node stays behind', async () => {
  const services = lab.docs['services.yaml'] as any[];
  services.find((d) => d.name === 'a').tls = { sni: 'a.internal', caFile: '/nonexistent/fleetxds-explain-ca.pem' };
  lab.write('services.yaml', services);
  for (const s of specs) {
    const e = await waitFor(`${s.id} refuses the cluster`, async () => {
      const x = await explain(s);
      return typeOf(x, 'cluster').state === 'refused' && x;
    });
    const c = typeOf(e, 'cluster');
    assert.equal(
      c.rules.map((r: any) => r.rule),
      ['nack'],
    );
    assert.match(c.rules[0].message, /fleetxds-explain-ca\.pem/, 'Envoy’s own text');
    assert.is(c.rules[0].version, c.served.version);
    assert.is.not(c.ackedVersion, c.served.version);
  }
  delete services.find((d) => d.name === 'a').tls;
  lab.write('services.yaml', services);
  for (const s of specs) await settled(s);
});

test.run();
