/**
 * Overrides served with an xDS TTL (src/transports/ttl.ts), with a scripted client over a real
 * gRPC socket: the overrides layer goes in a Resource wrapper with the TTL while it holds a value
 * (the base layer never does), SotW renews it by resending it at the version the client ACKed,
 * delta by a heartbeat (name and version, no body), both at a third of the TTL, only while the
 * client is up to date; an emptied layer goes without a TTL and renewals stop (SOTW-16, DELTA-12).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { OVERRIDE_LAYER, RUNTIME_LAYER } from '../../src/translate/runtime.ts';
import { connect, T, type Json } from '../helpers/ads-client.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const TTL_MS = 3000;
const WRAPPER = 'type.googleapis.com/envoy.service.discovery.v3.Resource';
const BASE_RUNTIME = 'kind: Runtime\nname: base\nvalues: { a.key: 1 }\n';
const OVERRIDE = 'kind: Runtime\nname: raise\nvalues: { a.key: 2 }\nfor: 1h\n';

let dir: string;
let app: RunningApp;

async function setTree(extra: string[]): Promise<void> {
  writeTree({ ...BASE, 'runtime.yaml': extra.join('---\n') }, dir);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
}

test.before.each(async () => {
  dir = writeTree({ ...BASE, 'runtime.yaml': [BASE_RUNTIME, OVERRIDE].join('---\n') });
  app = await startServer(dir, { grpc: { overrideTtlMs: TTL_MS } });
});

test.after.each(async () => {
  await app.close();
});

/** A SotW ACK (it names the layers again: a SotW request always carries its whole subscription). */
const ack = (res: Json) => ({
  type_url: res.type_url,
  version_info: res.version_info,
  response_nonce: res.nonce,
  resource_names: [RUNTIME_LAYER, OVERRIDE_LAYER],
});

/** Every response until `ms` of silence, in order. */
async function collect(s: { next(ms?: number): Promise<Json> }, ms: number): Promise<Json[]> {
  const out: Json[] = [];
  for (;;) {
    const r = await s.next(ms).catch(() => undefined);
    if (!r) return out;
    out.push(r);
  }
}

test('SotW: the overrides layer has a TTL and is resent at the ACKed version every third of it; the base layer never', async () => {
  const client = connect(app.grpcPort);
  const s = client.open();
  try {
    s.send({
      node: { id: 'n1', cluster: 'edge' },
      type_url: T.runtime,
      resource_names: [RUNTIME_LAYER, OVERRIDE_LAYER],
    });
    const first = await s.next();
    const byName = new Map(first.resources.map((r: Json) => [r.name, r]));
    assert.is((byName.get(RUNTIME_LAYER) as Json)['@type'], T.runtime, 'the base layer is not wrapped');
    const wrapped = byName.get(OVERRIDE_LAYER) as Json;
    assert.is(wrapped['@type'], WRAPPER);
    assert.is(wrapped.ttl, '3s');
    assert.equal(wrapped.resource.layer, { 'a.key': 2 });
    s.send(ack(first));
    const renewals: Json[] = [];
    const started = Date.now();
    while (renewals.length < 3) {
      const r = await s.next(TTL_MS);
      renewals.push(r);
      s.send(ack(r));
    }
    const took = Date.now() - started;
    assert.ok(took >= 2 * (TTL_MS / 3) - 200 && took < 3 * TTL_MS, `three renewals took ${took} ms`);
    for (const r of renewals) {
      assert.is(r.version_info, first.version_info, 'at the version the client holds');
      assert.equal(
        r.resources.map((x: Json) => [x['@type'], x.name, x.ttl]),
        [[WRAPPER, OVERRIDE_LAYER, '3s']],
      );
      assert.ok(r.resources[0].resource, 'a SotW renewal carries the resource');
    }
  } finally {
    s.close();
    client.close();
  }
});

test('SotW: a client that has not answered the newest response gets no renewal; an emptied layer has no TTL and renewals stop', async () => {
  const client = connect(app.grpcPort);
  const s = client.open();
  try {
    s.send({
      node: { id: 'n2', cluster: 'edge' },
      type_url: T.runtime,
      resource_names: [RUNTIME_LAYER, OVERRIDE_LAYER],
    });
    const first = await s.next();
    assert.ok(await s.quiet(TTL_MS / 3 + 600), 'not ACKed: no renewal');
    s.send(ack(first));
    const renewal = await s.next(TTL_MS);
    s.send(ack(renewal));
    await setTree([BASE_RUNTIME]);
    const emptied = await s.next();
    const layer = emptied.resources.find((r: Json) => r.name === OVERRIDE_LAYER) as Json;
    assert.is(layer['@type'], T.runtime, 'an empty layer goes unwrapped (no TTL)');
    assert.equal(layer.layer ?? {}, {});
    s.send(ack(emptied));
    assert.equal(await collect(s, TTL_MS / 3 + 600), [], 'no renewals of an empty layer');
  } finally {
    s.close();
    client.close();
  }
});

test('delta: the overrides layer has a TTL, renewed by heartbeats (its name and version, no body)', async () => {
  const client = connect(app.grpcPort, 'delta-ads');
  const s = client.open();
  try {
    s.send({
      node: { id: 'n3', cluster: 'edge' },
      type_url: T.runtime,
      resource_names_subscribe: [RUNTIME_LAYER, OVERRIDE_LAYER],
    });
    const first = await s.next();
    const byName = new Map(first.resources.map((r: Json) => [r.name, r]));
    assert.is((byName.get(RUNTIME_LAYER) as Json).ttl, undefined);
    const overrides = byName.get(OVERRIDE_LAYER) as Json;
    assert.is(overrides.ttl, '3s');
    assert.ok(overrides.resource);
    s.send({ type_url: T.runtime, response_nonce: first.nonce });
    const beat = await s.next(TTL_MS);
    assert.equal(
      beat.resources.map((r: Json) => [r.name, r.version, r.ttl, r.resource]),
      [[OVERRIDE_LAYER, overrides.version, '3s', undefined]],
    );
    assert.equal(beat.removed_resources ?? [], []);
  } finally {
    s.close();
    client.close();
  }
});

test.run();
