/**
 * Wires the stages into a running server. No process globals here (signals, exit codes live in
 * the CLI), so tests can start and stop an app in-process too.
 */
import type { Server } from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { createAdminServer } from '../admin/server.ts';
import type { ServerConfig } from '../config/server-config.ts';
import { splitListen } from '../config/server-config.ts';
import { Store } from '../model/store.ts';
import { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { TreeWatcher } from '../source/watcher.ts';
import { NodeRegistry } from '../status/node-registry.ts';
import { bindGrpc, createGrpcServer } from '../transports/grpc/server.ts';
import { ConfigPipeline } from './pipeline.ts';

export interface RunningApp {
  grpcPort: number;
  adminPort: number;
  store: Store;
  cache: SnapshotCache;
  registry: NodeRegistry;
  pipeline: ConfigPipeline;
  log: Logger;
  reload(): Promise<unknown>;
  close(): Promise<void>;
}

export async function startApp(config: ServerConfig, log: Logger = pino({ level: config.log.level })): Promise<RunningApp> {
  const store = new Store(config.database);
  const cache = new SnapshotCache();
  const registry = new NodeRegistry((n) => {
    log.warn({ node: n.stream.nodeId, group: n.stream.group, typeUrl: n.typeUrl, version: n.version, error: n.message }, 'NACK');
    store.recordNack({ at: n.at, nodeId: n.stream.nodeId, nodeCluster: n.stream.nodeCluster, nodeGroup: n.stream.group, transport: n.stream.transport, typeUrl: n.typeUrl, version: n.version, nonce: n.nonce, errorCode: n.code, message: n.message });
  });
  const pipeline = new ConfigPipeline(store, cache, log.child({ component: 'pipeline' }));

  // Serve the last good version before touching the directory (fast restart, survives a broken tree).
  pipeline.loadLatestFromStore();

  const grpcServer: Server = createGrpcServer({ cache, registry, log: log.child({ component: 'grpc' }), maxReceiveBytes: config.grpc.maxReceiveBytes });
  const grpcPort = await bindGrpc(grpcServer, config.grpc.listen);
  const admin: FastifyInstance = createAdminServer({ store, cache, registry, log });
  const { host, port } = splitListen(config.admin.listen);
  await admin.listen({ host, port });
  const adminPort = (admin.server.address() as { port: number }).port;

  const reload = () => pipeline.applyDirectory(config.configDir).catch((err) => log.error({ err }, 'apply failed'));
  await reload();

  let watcher: TreeWatcher | undefined;
  if (config.watch.enabled) {
    watcher = new TreeWatcher({
      dir: config.configDir,
      debounceMs: config.watch.debounceMs,
      maxWaitMs: config.watch.maxWaitMs,
      onChange: () => void reload(),
      onError: (err) => log.error({ err }, 'watcher error'),
    });
    await watcher.start();
  }
  log.info({ grpc: `${splitListen(config.grpc.listen).host}:${grpcPort}`, admin: `${host}:${adminPort}`, configDir: config.configDir, versionId: cache.current?.versionId ?? null }, 'fleetxds serving');

  return {
    grpcPort, adminPort, store, cache, registry, pipeline, log, reload,
    async close() {
      await watcher?.close();
      await admin.close();
      // xDS streams never end on their own, so a graceful tryShutdown would only wait; clients
      // keep their config and reconnect with backoff.
      grpcServer.forceShutdown();
      store.close();
    },
  };
}
