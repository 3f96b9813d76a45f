/**
 * Streams are released however they end: 150 raw HTTP/2 streams that send their first
 * DiscoveryRequest and are reset (RST_STREAM CANCEL) at once, on the next tick, or 20 ms later
 * leave no registered node behind while their connection stays open. A client that stops reading
 * keeps at most the newest undelivered state (intermediate versions are skipped) and is ended
 * once it has not read for grpc.maxBehindMs; grpc.maxUnreadBytes bounds what is written and not
 * yet handed to the connection.
 */
import http2 from 'node:http2';
import { test } from 'uvu';
import type { RunningApp } from '../../src/app/app.ts';
import * as assert from 'uvu/assert';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';
import { DISCOVERY_REQUEST, TypeUrls } from '../../src/xds/resource-types.ts';
import { adsRequest, grpcFrame, readResponses } from '../helpers/h2-ads.ts';

/** A first request from node `id`, framed. */
const requestFrame = (id: string) =>
  grpcFrame(encodeJson(DISCOVERY_REQUEST, { node: { id, cluster: 'c' }, type_url: TypeUrls.cluster }).bytes);

test('streams reset right after their first request are unregistered while the connection lives', async () => {
  const app = await startServer(writeTree(BASE));
  const session = http2.connect(`http://127.0.0.1:${app.grpcPort}`);
  session.on('error', () => {}); // the server going away at the end of the test
  try {
    let opened = 0;
    for (const when of ['now', 'tick', 'later'] as const) {
      for (let i = 0; i < 50; i++) {
        const req = adsRequest(session);
        req.on('data', () => {});
        req.write(requestFrame(`ghost-${when}-${i}`));
        opened++;
        const reset = () => req.close(http2.constants.NGHTTP2_CANCEL);
        if (when === 'now') reset();
        else if (when === 'tick') setImmediate(reset);
        else setTimeout(reset, 20);
      }
    }
    await waitFor('every reset stream released', () => app.registry.connected().length === 0, 5000);
    assert.ok(!session.closed, 'the connection is still open');
    assert.is(opened, 150);
  } finally {
    session.close();
    await app.close();
  }
});

function bigTree(): { tree: Record<string, string>; services: string } {
  const services = Array.from(
    { length: 300 },
    (_, i) => `kind: Service\nname: s${i}\nendpoints: [{ address: 10.1.${i % 250}.1:80 }]\n`,
  ).join('---\n');
  const routes = Array.from({ length: 300 }, (_, i) => `  - { match: { prefix: /s${i}/ }, to: s${i} }`).join('\n');
  const edge =
    'kind: Listener\nname: edge\nport: 8080\nvirtualHosts: [site]\n---\nkind: VirtualHost\nname: site\n' +
    `domains: ["*"]\nroutes:\n${routes}\n`;
  return { tree: { 'services.yaml': services, 'edge.yaml': edge }, services };
}

/** Gives every cluster of bigTree's services a connect timeout of k seconds: a full CDS push of ~30 KB. */
async function retimeClusters(app: RunningApp, dir: string, services: string, k: number): Promise<void> {
  writeTree({ 'services.yaml': services.replaceAll('kind: Service\n', `kind: Service\nconnectTimeout: ${k}s\n`) }, dir);
  await app.reload();
}

/** A raw ADS stream that sends one CDS request and does not read until told to. */
function sleepyStream(port: number) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {}); // the server going away at the end of the test
  const req = adsRequest(session);
  let status: string | undefined;
  req.on('trailers', (t) => (status = String(t['grpc-status'])));
  // A call ended before any response carries its status in the headers (gRPC's trailers-only form).
  req.on('response', (h) => h['grpc-status'] !== undefined && (status = String(h['grpc-status'])));
  req.write(requestFrame('sleepy')); // ... and no 'data' listener: the stream stays paused
  const versions: string[] = [];
  return {
    session,
    status: () => status,
    versions,
    /** Starts reading: every response's version_info, in order. */
    read: () => readResponses(req, (r) => versions.push(r.version_info)),
  };
}

test('a client that stops reading skips intermediate versions and catches up from the newest', async () => {
  const { tree, services } = bigTree();
  const dir = writeTree(tree);
  const app = await startServer(dir);
  const sleepy = sleepyStream(app.grpcPort);
  try {
    await waitFor('registered', () => app.registry.connected().length === 1);
    // Each change to every cluster's timeout is a full CDS push of ~30 KB to this stream.
    for (let k = 1; k <= 20; k++) {
      await retimeClusters(app, dir, services, k);
    }
    const status = app.registry.connected()[0]!;
    const sent = Number(status.types[TypeUrls.cluster]?.sentNonce);
    assert.ok(sent <= 4, `${sent} responses written for 21 versions: the rest were skipped, not queued`);
    const newest = app.cache.current!.groups.get('default')!.types.cluster.version;
    sleepy.read();
    await waitFor('caught up with the newest version', () => sleepy.versions.at(-1) === newest, 5000);
    assert.ok(sleepy.versions.length <= 5, `received ${sleepy.versions.length} responses`);
    assert.is(sleepy.status(), undefined, 'the stream lives on');
  } finally {
    sleepy.session.close();
    await app.close();
  }
});

test('a client that does not read for grpc.maxBehindMs is ended with RESOURCE_EXHAUSTED', async () => {
  const { tree, services } = bigTree();
  const dir = writeTree(tree);
  const app = await startServer(dir, { maxBehindMs: 500 });
  const sleepy = sleepyStream(app.grpcPort);
  try {
    await waitFor('registered', () => app.registry.connected().length === 1);
    for (let k = 1; k <= 5 && app.registry.connected().length; k++) {
      await retimeClusters(app, dir, services, k);
    }
    await waitFor('the non-reading stream ended', () => app.registry.connected().length === 0, 5000);
    sleepy.read();
    await waitFor('its status', () => sleepy.status() !== undefined, 5000);
    assert.is(sleepy.status(), '8', 'RESOURCE_EXHAUSTED');
  } finally {
    sleepy.session.close();
    await app.close();
  }
});

test('grpc.maxUnreadBytes counts what was handed to the connection: a reading client gets 20 pushes in a row', async () => {
  const { tree, services } = bigTree();
  const dir = writeTree(tree);
  // Room for two of the ~30 KB CDS responses: only a count that goes down as each is written lets 20 through.
  const app = await startServer(dir, { maxUnreadBytes: 80_000 });
  const reader = sleepyStream(app.grpcPort);
  reader.read();
  try {
    await waitFor('registered', () => app.registry.connected().length === 1);
    for (let k = 1; k <= 20; k++) {
      await retimeClusters(app, dir, services, k);
      const version = app.cache.current!.groups.get('default')!.types.cluster.version;
      await waitFor(`push ${k} received`, () => reader.versions.at(-1) === version, 5000);
    }
    assert.is(reader.versions.length, 21, 'the first response and every push');
    assert.is(reader.status(), undefined, 'the stream lives on');
    assert.is(app.registry.connected().length, 1);
  } finally {
    reader.session.close();
    await app.close();
  }
});

test('a response above grpc.maxUnreadBytes ends the stream with RESOURCE_EXHAUSTED', async () => {
  const app = await startServer(writeTree(bigTree().tree), { maxUnreadBytes: 10_000 });
  const reader = sleepyStream(app.grpcPort);
  reader.read();
  try {
    await waitFor('its status', () => reader.status() !== undefined, 5000);
    assert.is(reader.status(), '8', 'RESOURCE_EXHAUSTED');
    assert.equal(reader.versions, [], 'nothing of the 30 KB response was sent');
  } finally {
    reader.session.close();
    await app.close();
  }
});

test.run();
