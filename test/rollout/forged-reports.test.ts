/**
 * Forged ACKs and NACKs cannot steer a rollout: by default gates and NACK halts count only nodes
 * whose identity the transport authenticated (here: gRPC over mTLS, node ids bound to client
 * certificates). A REST poller without credentials that claims canary node ids is recorded and
 * shown, but neither halts the rollout with its (inferred) NACK nor promotes it with its ACK.
 */
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { connect, T, type Json } from '../helpers/ads-client.ts';
import { makePki } from '../helpers/certs.ts';
import { waitFor } from '../helpers/process.ts';
import { restRequest } from '../helpers/rest-poll.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';

const PREFIX = 'spiffe://fleet.test/';
const ROLLOUT = `kind: Rollout
name: staged
stages:
  - name: canary
    select: { idPattern: "canary-*" }
`;
const tree = (timeout: string, rollout = ROLLOUT) => ({
  ...BASE,
  'services.yaml': BASE['services.yaml']!.replace('name: api\n', `name: api\nconnectTimeout: ${timeout}\n`),
  'rollout.yaml': rollout,
});

/** A REST poll of CDS as any client can send one, claiming `id`. */
async function poll(port: number, id: string, version: string): Promise<{ status: number; version?: string }> {
  const r = await restRequest(port, { node: { id, cluster: 'c' }, type_url: T.cluster, version_info: version });
  return { status: r.status, version: (r.json as Json | undefined)?.version_info };
}

async function setup(rollout?: string): Promise<{ app: RunningApp; dir: string; canary: ReturnType<typeof connect> }> {
  const pki = makePki(tempDir(), 'fleet-ca');
  const server = pki.issue('server', 'DNS:localhost,IP:127.0.0.1');
  const canaryCert = pki.issue('canary-1', `URI:${PREFIX}node/canary-1`);
  const dir = writeTree(tree('1s', rollout));
  const app = await startServer(dir, {
    rest: { holdMs: 0 },
    grpc: {
      tls: { certFile: server.cert, keyFile: server.key, clientCaFile: pki.caCert, identityPrefix: PREFIX },
    },
  });
  const creds = grpc.credentials.createSsl(
    Buffer.from(pki.caPem),
    Buffer.from(canaryCert.keyPem),
    Buffer.from(canaryCert.certPem),
  );
  const canary = connect(app.grpcPort, 'ads', creds, {
    'grpc.ssl_target_name_override': 'localhost',
    'grpc.default_authority': 'localhost',
  });
  return { app, dir, canary };
}

const rolloutOf = async (app: RunningApp) =>
  (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/rollout`)).json()) as {
    rollout: Json | null;
    last?: Json;
  };

async function applyV2(app: RunningApp, dir: string, rollout?: string): Promise<void> {
  writeTree(tree('2s', rollout), dir);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
}

test('an unauthenticated NACK claiming a canary id does not halt; unauthenticated ACKs do not promote', async () => {
  const { app, dir, canary } = await setup();
  try {
    const s = canary.open();
    s.send({ node: { id: 'canary-1', cluster: 'c' }, type_url: T.cluster });
    const first = await s.next();
    s.send({ type_url: T.cluster, version_info: first.version_info, response_nonce: first.nonce });
    await applyV2(app, dir);
    const pushed = await s.next();
    // Forged: canary-2 takes v2, then says it still has nothing (REST's NACK); canary-3..5 "ACK" v2.
    const forged = await poll(app.restPort, 'canary-2', '');
    assert.is(forged.version, pushed.version_info, 'the forger is served its claimed stage');
    assert.is((await poll(app.restPort, 'canary-2', '')).status, 304);
    await waitFor('the inferred NACK recorded', () => app.stores.nacks.list('canary-2', 5).length === 1);
    for (const id of ['canary-3', 'canary-4', 'canary-5']) {
      await poll(app.restPort, id, '');
      await poll(app.restPort, id, pushed.version_info);
    }
    const during = (await rolloutOf(app)).rollout!;
    assert.is(during.status, 'progressing', 'not halted by the forged NACK');
    assert.is(during.counts, 'authenticated nodes');
    assert.is(during.stages[0].nodes, 1, 'only the authenticated canary counts');
    assert.is(during.stages[0].unauthenticated, 4);
    assert.is(during.stages[0].upToDate, 0, 'the forged ACKs are not counted');
    assert.is(during.stages[0].waitingFor, 'acks');
    assert.match(during.stages[0].summary, /4 unauthenticated, not counted/);
    // The authenticated canary's ACK is what promotes it.
    s.send({ type_url: T.cluster, version_info: pushed.version_info, response_nonce: pushed.nonce });
    await waitFor('rollout complete', async () => (await rolloutOf(app)).last?.status === 'complete', 5000);
    s.close();
  } finally {
    canary.close();
    await app.close();
  }
});

test('a Rollout that accepts unauthenticated nodes counts them: the same forged NACK halts it (and validate warns)', async () => {
  const accepting = `${ROLLOUT}acceptUnauthenticatedNodes: true\n`;
  const { app, dir, canary } = await setup(accepting);
  try {
    await applyV2(app, dir, accepting);
    await poll(app.restPort, 'canary-2', '');
    await poll(app.restPort, 'canary-2', '');
    await waitFor('halted', async () => (await rolloutOf(app)).rollout?.status === 'halted', 5000);
    assert.is((await rolloutOf(app)).rollout!.counts, 'all nodes');
    const check = await checkTree(dir);
    assert.equal(check.diagnostics.map(formatDiagnostic), [
      'rollout.yaml:6:29: warning FXDS_INVALID_VALUE: Rollout/staged acceptUnauthenticatedNodes: proxies the ' +
        'transport does not authenticate count in gates and halt on NACK: any client that can reach fleetxds ' +
        'can claim a node id and promote or halt this rollout',
    ]);
  } finally {
    canary.close();
    await app.close();
  }
});

test.run();
