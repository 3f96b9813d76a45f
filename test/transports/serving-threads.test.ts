/**
 * gRPC served by several threads (grpc.threads): connections spread over the threads by the
 * kernel, every stream on every thread gets the published config and each change, what streams
 * report reaches the one status (connected nodes, ACKs, NACKs in the log, metrics per thread), the
 * stream limit holds for the process, and closing ends every stream on every thread. The protocol
 * suites run against threads too: FLEETXDS_TEST_GRPC_THREADS=2 npm test -- protocol.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, T, type Json, type ScriptedStream } from '../helpers/ads-client.ts';
import { waitFor } from '../helpers/process.ts';
import pino from 'pino';
import { serveGrpc } from '../../src/transports/grpc/serving.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const ack = (r: Json): Json => ({ type_url: r.type_url, version_info: r.version_info, response_nonce: r.nonce });
/** A client on a connection of its own (grpc-js shares one per target by default). */
const ownConnection = (port: number) =>
  connect(port, 'ads', grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });

test('streams spread over two threads get every change; status, ACKs and NACKs reach the main thread', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir, { grpc: { threads: 2 } });
  const clients = Array.from({ length: 16 }, () => ownConnection(app.grpcPort));
  try {
    assert.is(app.grpc.threads, 2);
    const streams: ScriptedStream[] = [];
    const first: Json[] = [];
    for (const [i, c] of clients.entries()) {
      const s = c.open();
      s.send({ node: { id: `node-${i}`, cluster: 'c' }, type_url: T.cluster });
      streams.push(s);
    }
    for (const s of streams) {
      const r = await s.next();
      assert.equal(r.resources.map((x: Json) => x.name).sort(), ['api', 'web']);
      s.send(ack(r));
      first.push(r);
    }
    await waitFor('every stream in the status', () => app.registry.connected().length === 16, 3000);
    const perThread = app.grpc.streamsByThread();
    assert.is(perThread.length, 2);
    assert.ok(
      perThread.every((n) => n > 0),
      `both threads serve (16 connections: ${perThread})`,
    );
    const metrics = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
    assert.match(metrics, new RegExp(`fleetxds_grpc_thread_streams\\{thread="0"\\} ${perThread[0]}\\b`));

    writeFileSync(
      join(dir, 'services.yaml'),
      BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 7s\n'),
    );
    await app.reload();
    const second = await Promise.all(streams.map((s) => s.next()));
    for (const [i, r] of second.entries()) assert.is.not(r.version_info, first[i]!.version_info, 'a new version');
    streams.slice(1).forEach((s, i) => s.send(ack(second[i + 1]!)));
    streams[0]!.send({
      type_url: T.cluster,
      version_info: first[0]!.version_info,
      response_nonce: second[0]!.nonce,
      error_detail: { code: 13, message: 'rejected by a test on a serving thread' },
    });
    await waitFor(
      'every other node ACKed the new version',
      () =>
        app.registry
          .connected()
          .filter((s) => s.nodeId !== 'node-0')
          .every((s) => s.types[T.cluster]?.ackedVersion === second[1]!.version_info),
      3000,
    );
    await waitFor('the NACK stored', () => app.stores.nacks.list('node-0').length === 1, 3000);
    assert.is(app.stores.nacks.list('node-0')[0]!.message, 'rejected by a test on a serving thread');
    assert.is(app.registry.byNodeId('node-0')[0]!.types[T.cluster]!.lastNack!.version, second[0]!.version_info);

    streams[3]!.close();
    await waitFor('a closed stream leaves the status', () => app.registry.connected().length === 15, 3000);
    const ends = Promise.all(streams.slice(4).map((s) => s.status));
    await app.close();
    for (const st of await ends) assert.is(st.code, grpc.status.UNAVAILABLE, 'closing ends streams on every thread');
  } finally {
    for (const c of clients) c.close();
  }
});

test('a serving thread that dies is started again with the current config; its streams end, the others stay', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  process.env.FLEETXDS_TEST_DIE_MARKER = join(tempDir(), 'died');
  const serving = await serveGrpc({
    listen: '127.0.0.1:0',
    threads: 2,
    logLevel: 'silent',
    serveLastAckedOnNack: false,
    server: { maxStreams: 100 },
    cache: app.cache,
    registry: app.registry,
    log: pino({ level: 'silent' }),
    workerUrl: new URL('../helpers/dying-serving-worker.ts', import.meta.url),
  });
  const open = (clients: ReturnType<typeof ownConnection>[], from: number) =>
    clients.map((c, i) => {
      const s = c.open();
      s.send({ node: { id: `node-${from + i}`, cluster: 'c' }, type_url: T.cluster });
      return s;
    });
  const before = Array.from({ length: 12 }, () => ownConnection(serving.port));
  const after = Array.from({ length: 12 }, () => ownConnection(serving.port));
  const probes: ReturnType<typeof ownConnection>[] = [];
  try {
    const streams = open(before, 0);
    const first = await Promise.all(streams.map((s) => s.next()));
    streams.forEach((s, i) => s.send(ack(first[i]!)));
    // The kernel spreads connections over the threads' sockets by a hash of their addresses, so 12
    // may all land on one: more, until each thread has one.
    while (serving.streamsByThread().some((n) => n === 0) && before.length < 48) {
      const c = ownConnection(serving.port);
      before.push(c);
      const s = open([c], before.length - 1)[0]!;
      const r = await s.next();
      s.send(ack(r));
      streams.push(s);
      first.push(r);
    }
    await waitFor('every stream in the status', () => app.registry.connected().length === streams.length, 3000);
    const [onThread0, onThread1] = serving.streamsByThread() as [number, number];
    assert.ok(onThread0 > 0 && onThread1 > 0, `both threads serve (${onThread0}, ${onThread1})`);

    // The second config: thread 1 dies on it.
    writeFileSync(
      join(dir, 'services.yaml'),
      BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 7s\n'),
    );
    await app.reload();
    const outcomes = await Promise.all(
      streams.map((s) =>
        Promise.race([
          s.next().then((r) => (r.version_info !== first[0]!.version_info ? 'new version' : 'same version')),
          s.status.then((st) => grpc.status[st.code]),
        ]),
      ),
    );
    assert.is(outcomes.filter((o) => o === 'new version').length, onThread0, outcomes.join());
    assert.is(outcomes.filter((o) => o === 'UNAVAILABLE').length, onThread1, outcomes.join());
    await waitFor(
      "the dead thread's streams leave the status",
      () => app.registry.connected().length === onThread0,
      3000,
    );

    // Started again (after a second), with the config published while it was down.
    const current = app.cache.current!.versionId;
    // A new connection per attempt: how many attempts the restart takes depends on the machine.
    await waitFor(
      'both threads serve again',
      async () => {
        const probe = ownConnection(serving.port);
        probes.push(probe);
        await open([probe], 100 + probes.length)[0]!.next();
        return serving.streamsByThread()[1]! > 0;
      },
      10_000,
      200,
    );
    const late = await Promise.all(open(after, 200).map((s) => s.next()));
    assert.ok(
      late.every((r) => r.version_info !== first[0]!.version_info),
      'the restarted thread serves the new version',
    );
    assert.is(app.cache.current!.versionId, current);
  } finally {
    for (const c of [...before, ...after, ...probes]) c.close();
    await serving.close('test over');
    await app.close();
    delete process.env.FLEETXDS_TEST_DIE_MARKER;
  }
});

test('grpc.maxStreams holds for the process, not per thread', async () => {
  const app = await startServer(writeTree(BASE), { grpc: { threads: 2, maxStreams: 4 } });
  const clients = Array.from({ length: 8 }, () => ownConnection(app.grpcPort));
  try {
    const outcomes: string[] = [];
    for (const [i, c] of clients.entries()) {
      const s = c.open();
      s.send({ node: { id: `n${i}`, cluster: 'c' }, type_url: T.cluster });
      outcomes.push(await Promise.race([s.next().then(() => 'served'), s.status.then((st) => grpc.status[st.code])]));
    }
    assert.equal(outcomes, [...Array(4).fill('served'), ...Array(4).fill('RESOURCE_EXHAUSTED')]);
  } finally {
    for (const c of clients) c.close();
    await app.close();
  }
});

test.run();
