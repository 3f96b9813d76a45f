/**
 * A gRPC stream's requests and logs. A request that does not decode ends the stream with
 * INVALID_ARGUMENT and the reason; once a stream is registered, the node its later requests
 * carry (Envoy resends it, 61 KB for 1.40, unless set_node_on_first_message_only) is not read.
 * Its log lines name the transport and the peer (the stream's logger is made only when something
 * is logged, not at every connect), the open and close lines are debug and name the node, and a
 * protocol error is a warning.
 */
import http2 from 'node:http2';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { DISCOVERY_REQUEST } from '../../src/xds/resource-types.ts';
import { lenField } from '../../src/xds/wire.ts';
import { MAX_STREAMS_PER_CONNECTION } from '../../src/transports/grpc/server.ts';
import { connect, T } from '../helpers/ads-client.ts';
import { adsRequest, grpcFrame, readResponses, type RawResponse } from '../helpers/h2-ads.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

type Line = Record<string, unknown>;

test('stream lines carry the transport, the peer and the node; a protocol error is a warning', async () => {
  const raw: string[] = [];
  const app = await startServer(writeTree(BASE), { logLines: raw });
  const lines = (msg: string): Line[] => raw.map((l) => JSON.parse(l) as Line).filter((l) => l.msg === msg);
  const client = connect(app.grpcPort);
  try {
    const s = client.open();
    s.send({ node: { id: 'logged-node', cluster: 'c' }, type_url: T.cluster });
    await s.next();
    const opened = await waitFor('stream opened line', () => lines('stream opened')[0]);
    assert.is(opened.node, 'logged-node');
    assert.is(opened.transport, 'grpc-ads');
    assert.match(String(opened.peer), /^(ipv4:)?127\.0\.0\.1:\d+$/);
    assert.is(opened.level, 20, 'debug');

    s.send({ type_url: '' }); // ADS needs a type_url on every request
    const status = await s.status;
    assert.is(status.code, 3, 'INVALID_ARGUMENT');
    const warned = await waitFor('protocol error line', () => lines('protocol error; closing stream')[0]);
    assert.is(warned.level, 40, 'warn');
    assert.is(warned.transport, 'grpc-ads');
    assert.is(warned.peer, opened.peer, 'the same stream logger');
    assert.match(String(warned.reason), /type_url/);
    const closed = await waitFor('stream closed line', () => lines('stream closed')[0]);
    assert.is(closed.node, 'logged-node');
    assert.is(closed.peer, opened.peer);
  } finally {
    client.close();
    await app.close();
  }
});

/** A raw ADS stream: frames written as given, responses decoded, the final status. */
function rawAds(port: number) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const req = adsRequest(session);
  const responses: RawResponse[] = [];
  readResponses(req, (r) => responses.push(r));
  // The status: in trailers, or in the response headers when nothing was sent before it (trailers-only).
  const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => {
    req.on('trailers', resolve);
    req.on('response', (h) => h['grpc-status'] !== undefined && resolve(h));
  });
  return {
    responses,
    trailers,
    send: (message: Uint8Array) => req.write(grpcFrame(message)),
    close: () => session.close(),
  };
}

const request = (json: Record<string, unknown>) => encodeJson(DISCOVERY_REQUEST, json).bytes;

test('a request that does not decode ends the stream with INVALID_ARGUMENT and the reason', async () => {
  const app = await startServer(writeTree(BASE));
  const s = rawAds(app.grpcPort);
  try {
    s.send(Buffer.from([0x7f, 0x01])); // field 15 of wire type 7, which protobuf does not have
    const t = await s.trailers;
    assert.is(t['grpc-status'], '3');
    const reason = decodeURIComponent(String(t['grpc-message']));
    assert.match(reason, /^cannot decode the DiscoveryRequest: invalid wire type 7/, reason);
  } finally {
    s.close();
    await app.close();
  }
});

test("after a stream's first request, the node its requests carry is not read", async () => {
  const app = await startServer(writeTree(BASE));
  const s = rawAds(app.grpcPort);
  try {
    s.send(request({ node: { id: 'resending', cluster: 'c' }, type_url: T.cluster }));
    const cds = await waitFor('CDS response', () => s.responses.find((r) => r.type_url === T.cluster));
    // Requests whose node field would not decode as a Node (a field of wire type 7): it is cut out unread.
    const badNode = lenField(2, Buffer.from([0x7f, 0x01]));
    s.send(
      Buffer.concat([
        request({ version_info: cds.version_info, response_nonce: cds.nonce, type_url: T.cluster }),
        badNode,
      ]),
    );
    s.send(Buffer.concat([badNode, request({ type_url: T.listener })]));
    await waitFor('LDS response on the same stream', () => s.responses.find((r) => r.type_url === T.listener));
    const status = app.registry.connected().find((c) => c.nodeId === 'resending');
    assert.ok(status, 'registered once, by its first request');
    assert.is(status.types[T.cluster]?.ackedVersion, cds.version_info, 'the ACK was read');
  } finally {
    s.close();
    await app.close();
  }
});

test("one connection may have 1,000 streams open at once (the server's HTTP/2 settings say so)", async () => {
  const app = await startServer(writeTree(BASE));
  const session = http2.connect(`http://127.0.0.1:${app.grpcPort}`);
  session.on('error', () => {});
  try {
    await new Promise((r) => session.once('remoteSettings', r));
    // nghttp2 refuses a stream past what it advertised (REFUSED_STREAM) before any call starts.
    assert.is(session.remoteSettings.maxConcurrentStreams, 1000);
    assert.is(MAX_STREAMS_PER_CONNECTION, 1000);
  } finally {
    session.destroy();
    await app.close();
  }
});

test.run();
