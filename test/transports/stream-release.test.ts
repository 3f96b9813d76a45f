/**
 * Streams are released however they end: 150 raw HTTP/2 streams that send their first
 * DiscoveryRequest and are reset (RST_STREAM CANCEL) at once, on the next tick, or 20 ms later
 * leave no registered node behind while their connection stays open.
 */
import http2 from 'node:http2';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

function grpcFrame(id: string): Buffer {
  const { bytes } = encodeJson('envoy.service.discovery.v3.DiscoveryRequest', {
    node: { id, cluster: 'c' },
    type_url: TypeUrls.cluster,
  });
  const b = Buffer.alloc(5 + bytes.length);
  b.writeUInt32BE(bytes.length, 1);
  Buffer.from(bytes).copy(b, 5);
  return b;
}

test('streams reset right after their first request are unregistered while the connection lives', async () => {
  const app = await startServer(writeTree(BASE));
  const session = http2.connect(`http://127.0.0.1:${app.grpcPort}`);
  session.on('error', () => {}); // the server going away at the end of the test
  try {
    let opened = 0;
    for (const when of ['now', 'tick', 'later'] as const) {
      for (let i = 0; i < 50; i++) {
        const req = session.request({
          ':method': 'POST',
          ':path': '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        req.on('error', () => {});
        req.on('data', () => {});
        req.write(grpcFrame(`ghost-${when}-${i}`));
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

test('a client that never reads is ended (RESOURCE_EXHAUSTED) once its unread responses pass the bound', async () => {
  const services = Array.from(
    { length: 300 },
    (_, i) => `kind: Service\nname: s${i}\nendpoints: [{ address: 10.1.${i % 250}.1:80 }]\n`,
  ).join('---\n');
  const routes = Array.from({ length: 300 }, (_, i) => `  - { match: { prefix: /s${i}/ }, to: s${i} }`).join('\n');
  const tree = {
    'services.yaml': services,
    'edge.yaml': `kind: Listener\nname: edge\nport: 8080\nvirtualHosts: [site]\n---\nkind: VirtualHost\nname: site\ndomains: ["*"]\nroutes:\n${routes}\n`,
  };
  const dir = writeTree(tree);
  const app = await startServer(dir, { maxUnreadBytes: 256 * 1024 });
  const session = http2.connect(`http://127.0.0.1:${app.grpcPort}`);
  session.on('error', () => {}); // the server going away at the end of the test
  try {
    const req = session.request({
      ':method': 'POST',
      ':path': '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    req.on('error', () => {});
    let status: string | undefined;
    req.on('trailers', (t) => (status = String(t['grpc-status'])));
    req.write(grpcFrame('sleepy')); // ... and never read: no 'data' listener, the stream stays paused
    await waitFor('registered', () => app.registry.connected().length === 1);
    // Each change to every cluster's timeout is a full CDS push of ~30 KB to this stream.
    for (let k = 1; k <= 20 && app.registry.connected().length; k++) {
      writeTree(
        { 'services.yaml': services.replaceAll('kind: Service\n', `kind: Service\nconnectTimeout: ${k}s\n`) },
        dir,
      );
      await app.reload();
    }
    await waitFor('the non-reading stream ended', () => app.registry.connected().length === 0, 5000);
    req.resume();
    await waitFor('its status', () => status !== undefined, 5000);
    assert.is(status, '8', 'RESOURCE_EXHAUSTED');
  } finally {
    session.close();
    await app.close();
  }
});

test.run();
