/**
 * Staged rollouts over real gRPC streams (scripted ADS clients; the real-Envoy version is in
 * test/e2e/envoy-rollout.test.ts): the canary stage gets a new version first, the rest when the
 * canary ACKed it; a canary NACK halts the rollout while the rest keeps the previous version;
 * proxies connecting mid-rollout get their stage's version; abort serves the previous version.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, T, type Json, type ScriptedStream } from '../helpers/ads-client.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { join } from 'node:path';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const ROLLOUT = `kind: Rollout
name: staged
stages:
  - name: canary
    select: { idPattern: "canary-*" }
# The scripted clients here connect without credentials: the rollout must count them.
acceptUnauthenticatedNodes: true
`;
const tree = (timeout: string) => ({
  ...BASE,
  'services.yaml': BASE['services.yaml']!.replace('name: api\n', `name: api\nconnectTimeout: ${timeout}\n`),
  'rollout.yaml': ROLLOUT,
});

let app: RunningApp;
let dir: string;
let client: ReturnType<typeof connect>;

test.before.each(async () => {
  dir = writeTree(tree('1s'));
  app = await startServer(dir);
  client = connect(app.grpcPort);
});
test.after.each(async () => {
  client.close();
  await app.close();
});

const timeoutOf = (cds: Json) => cds.resources.find((r: Json) => r.name === 'api')?.connect_timeout;

/** A stream that subscribed to CDS and ACKed the first response. */
async function proxy(id: string): Promise<{ s: ScriptedStream; cds: Json }> {
  const s = client.open();
  s.send({ node: { id, cluster: 'c' }, type_url: T.cluster });
  const cds = await s.next();
  s.send({ type_url: T.cluster, version_info: cds.version_info, response_nonce: cds.nonce });
  return { s, cds };
}

async function apply(timeout: string): Promise<number> {
  writeTree(tree(timeout), dir);
  const out = (await app.reload()) as { status: string; versionId: number };
  assert.is(out.status, 'applied');
  return out.versionId;
}

const rolloutApi = async () =>
  (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/rollout`)).json()) as {
    rollout: Json | null;
    last?: Json;
  };
const command = async (cmd: string) =>
  fetch(`http://127.0.0.1:${app.adminPort}/api/v1/rollout/${cmd}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ actor: 'tester' }),
  });

test('the canary gets the new version first; its ACK promotes it to the rest', async () => {
  const canary = await proxy('canary-1');
  const fleet = await proxy('fleet-1');
  const v2 = await apply('2s');
  const pushed = await canary.s.next();
  assert.is(timeoutOf(pushed), '2s', 'the canary is served the new version');
  assert.is(pushed.control_plane.identifier, `fleetxds version ${v2}`, 'and told which version it is');
  assert.ok(await fleet.s.quiet(300), 'the rest is not, yet');
  const during = await rolloutApi();
  assert.is(during.rollout?.status, 'progressing');
  assert.is(during.rollout?.stage, 'canary');
  assert.is(during.rollout?.to, v2);
  assert.match(during.rollout?.stages[0].summary, /canary: 1 node on version \d+, 0 ACKed/);
  canary.s.send({ type_url: T.cluster, version_info: pushed.version_info, response_nonce: pushed.nonce });
  const late = await fleet.s.next(5000);
  assert.is(timeoutOf(late), '2s', 'the ACK gate promoted the version to the rest');
  await waitFor('rollout complete', async () => (await rolloutApi()).last?.status === 'complete', 3000);
  const audit = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/audit`)).json()) as { audit: Json[] };
  assert.ok(audit.audit.some((a) => a.action === 'rollout-start'));
  assert.ok(audit.audit.some((a) => a.action === 'rollout-complete'));
});

test('a canary NACK halts the rollout: the rest keeps the previous version; abort serves it to the canary again', async () => {
  const canary = await proxy('canary-1');
  const fleet = await proxy('fleet-1');
  await apply('3s');
  const pushed = await canary.s.next();
  canary.s.send({
    type_url: T.cluster,
    version_info: canary.cds.version_info,
    response_nonce: pushed.nonce,
    error_detail: { code: 13, message: 'cluster api: refused by the canary' },
  });
  await waitFor('halted', async () => (await rolloutApi()).rollout?.status === 'halted', 3000);
  const halted = (await rolloutApi()).rollout!;
  assert.is(halted.halt.reason, 'nack');
  assert.is(halted.halt.nodeId, 'canary-1');
  assert.is(halted.halt.message, 'cluster api: refused by the canary');
  assert.ok(await fleet.s.quiet(1200), 'the rest never sees the NACKed version (gates are not evaluated when halted)');
  const status = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as Json;
  assert.is(status.staged.rollout.status, 'halted');
  const metrics = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
  assert.match(metrics, /^fleetxds_rollout_halted 1$/m);
  assert.match(metrics, /^fleetxds_rollout_stage 0$/m);
  const refused = await command('promote');
  assert.is(refused.status, 409, 'a halted rollout is not promoted');
  const abort = await command('abort');
  assert.is(abort.status, 200);
  const back = await canary.s.next();
  assert.is(timeoutOf(back), '1s', 'after abort the canary is served the previous version again');
  assert.ok(await fleet.s.quiet(300), 'the rest had it all along');
  const versions = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/versions`)).json()) as Json;
  assert.is(versions.versions[0].sourceKind, 'rollback');
});

test('a version NACKed, reverted and pushed again is NACKed again: the new rollout halts too', async () => {
  const canary = await proxy('canary-1');
  await proxy('fleet-1');
  const nackNext = async () => {
    const pushed = await canary.s.next();
    assert.is(timeoutOf(pushed), '3s');
    canary.s.send({
      type_url: T.cluster,
      version_info: canary.cds.version_info,
      response_nonce: pushed.nonce,
      error_detail: { code: 13, message: 'cluster api: refused by the canary' },
    });
  };
  await apply('3s');
  await nackNext();
  await waitFor('halted', async () => (await rolloutApi()).rollout?.status === 'halted', 3000);
  // Reverted: the canary takes it.
  await apply('1s');
  const back = await canary.s.next();
  assert.is(timeoutOf(back), '1s');
  canary.s.send({ type_url: T.cluster, version_info: back.version_info, response_nonce: back.nonce });
  // The same bad tree again: the same version, NACKed again; its rollout halts as the first did.
  const again = await apply('3s');
  await nackNext();
  await waitFor(
    'the second rollout halted',
    async () => {
      const r = (await rolloutApi()).rollout;
      return r?.to === again && r.status === 'halted';
    },
    3000,
  );
});

test("proxies connecting mid-rollout get their stage's version; halt and resume from the API", async () => {
  const canary = await proxy('canary-1');
  const v1 = app.cache.current!.versionId;
  const v2 = await apply('4s');
  await canary.s.next(); // not ACKed: the gate does not hold
  const lateCanary = await proxy('canary-2');
  const lateFleet = await proxy('fleet-2');
  assert.is(timeoutOf(lateCanary.cds), '4s');
  assert.is(timeoutOf(lateFleet.cds), '1s');
  assert.is(lateCanary.cds.control_plane.identifier, `fleetxds version ${v2}`);
  assert.is(lateFleet.cds.control_plane.identifier, `fleetxds version ${v1}`, 'the rest is told its own version');
  assert.is((await command('halt')).status, 200);
  assert.is((await rolloutApi()).rollout?.status, 'halted');
  assert.is((await command('resume')).status, 200);
  assert.is((await command('promote')).status, 200, 'promote skips the remaining gates');
  const promoted = await lateFleet.s.next(3000);
  assert.is(timeoutOf(promoted), '4s');
  assert.is((await command('promote')).status, 404, 'nothing left to promote');
});

test("a restart resumes the rollout: same stage, each proxy served its stage's version", async () => {
  writeTree(tree('5s'), dir);
  const database = join(tempDir(), 'restart.db');
  // A server on a database of its own, so the same database can be opened again after it stops.
  client.close();
  await app.close();
  app = await startServer(dir, { database });
  client = connect(app.grpcPort);
  await apply('6s'); // a rollout in this database
  const started = (await rolloutApi()).rollout!;
  assert.is(started.status, 'progressing');
  client.close();
  await app.close();
  app = await startServer(dir, { database });
  client = connect(app.grpcPort);
  const resumed = (await rolloutApi()).rollout!;
  assert.is(resumed.id, started.id);
  assert.is(resumed.stage, 'canary');
  assert.is(timeoutOf((await proxy('canary-9')).cds), '6s');
  assert.is(timeoutOf((await proxy('fleet-9')).cds), '5s');
});

test.run();
