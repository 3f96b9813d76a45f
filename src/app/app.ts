/**
 * Wires the stages into a running server. No process globals here (signals, exit codes live in
 * the CLI), so tests can start and stop an app in-process too.
 */
import pino, { type Logger } from 'pino';
import { ConfigError, secretsAllowed, splitListen } from '../config/server-config.ts';
import type { ServerConfig, TlsSettings } from '../config/server-config.ts';
import { openStores, type Stores } from '../store/database.ts';
import { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { ReadRetry } from './read-retry.ts';
import { nothingServedReason } from '../shared/diagnostics.ts';
import { ListenerCertificate } from './listener-certificates.ts';
import { NodeRegistry } from '../status/node-registry.ts';
import { serveGrpc, type GrpcServing } from '../transports/grpc/serving.ts';
import { ConfigPipeline } from './pipeline.ts';
import { EnvoyChecker, envoyCheckDir } from '../compile/envoy-check.ts';
import { Metrics } from '../status/metrics.ts';
import { connectedFleet } from '../model/fleet.ts';
import type { RestServer } from '../transports/rest/rest-server.ts';
import type { FileRenderer, RenderStats } from '../transports/files/file-renderer.ts';
import { RolloutDriver } from './rollout-driver.ts';
import { DecisionDesk } from './decision-desk.ts';
import type { PostgresDecisionLog } from '../decision-log/postgres-log.ts';
import type { SharedDecisionStatus } from '../decision-log/decision.ts';
import { retentionOf } from '../store/retention.ts';
import { Teardown } from './teardown.ts';
import { nackReports } from './nack-reports.ts';
import { keepEndpoints, registeredEndpoints } from './registered-endpoints.ts';
import { adminControl } from './admin-control.ts';
import { startAdmin, startRest, type ListenerParts } from './listeners.ts';
import { renderFiles } from './file-rendering.ts';
import { readAndWatchTree, watchListenerCertificates, watchSecretFiles } from './watchers.ts';

export interface RunningApp {
  grpcPort: number;
  grpc: GrpcServing;
  adminPort: number;
  /** 0 when REST is not enabled. */
  restPort: number;
  rest?: RestServer;
  files?: FileRenderer;
  /** Resolves when the files of the latest published version are on disk. */
  filesIdle(): Promise<RenderStats | undefined>;
  /** What systemd's status line says: the version served, or why nothing is. */
  servingStatus(): string;
  stores: Stores;
  cache: SnapshotCache;
  registry: NodeRegistry;
  pipeline: ConfigPipeline;
  log: Logger;
  /** The shared decision store as this replica sees it (undefined when decisions are not shared). */
  sharedDecisions(): SharedDecisionStatus | undefined;
  reload(): Promise<unknown>;
  /** Reads the gRPC and REST listeners' certificate files again (the watcher does on a change; SIGHUP too). */
  reloadCertificates(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the server. A start that fails midway undoes what it had set up (listeners, serving
 * threads, timers, watchers, the database) before it throws.
 */
export async function startApp(
  config: ServerConfig,
  log: Logger = pino({ level: config.log.level }),
): Promise<RunningApp> {
  const teardown = new Teardown();
  try {
    return await assemble(config, log, teardown);
  } catch (err) {
    await teardown.run(log);
    throw err;
  }
}

/** fleetxds's own certificate for a listener (gRPC, REST): checked before anything starts. */
function listenerCertificate(
  listener: 'grpc' | 'rest',
  files: TlsSettings | undefined,
  log: Logger,
): ListenerCertificate | undefined {
  if (!files) return undefined;
  try {
    return new ListenerCertificate(listener, files, log);
  } catch (err) {
    throw new ConfigError(`${listener}.tls: ${(err as Error).message}`);
  }
}

/** The shared decision store, when replicas share decisions (pg is loaded only then). */
async function sharedDecisionLog(config: ServerConfig, log: Logger): Promise<PostgresDecisionLog | undefined> {
  const pg = config.replica?.postgres;
  if (!pg) return undefined;
  const { PostgresDecisionLog } = await import('../decision-log/postgres-log.ts');
  return new PostgresDecisionLog({
    url: pg.url,
    pollMs: pg.pollMs ?? 1000,
    queryTimeoutMs: pg.queryTimeoutMs ?? 3000,
    replica: config.replica?.name ?? 'fleetxds',
    log: log.child({ component: 'decisions' }),
  });
}

/** Says which transports refuse TLS secrets, and warns when loopback clients get them unauthenticated. */
function logSecretPolicy(config: ServerConfig, log: Logger): ReturnType<typeof secretsAllowed> {
  const sds = secretsAllowed(config);
  if (config.sds?.insecureLoopbackOnly)
    log.warn(
      'sds.insecureLoopbackOnly: TLS private keys are served to unauthenticated clients on loopback; never use ' +
        'this in production',
    );
  for (const [transport, allowed] of Object.entries(sds)) {
    if (!allowed && (transport === 'grpc' || config.rest))
      log.info(
        { transport },
        'TLS secrets (SDS) are refused on this transport: it does not authenticate nodes (configure mTLS with ' +
          'identityPrefix, or REST tokens)',
      );
  }
  return sds;
}

async function startGrpc(
  config: ServerConfig,
  parts: { cache: SnapshotCache; registry: NodeRegistry; log: Logger; teardown: Teardown },
  certificate: ListenerCertificate | undefined,
  secretsAllowedHere: boolean,
): Promise<GrpcServing> {
  const grpc = await serveGrpc({
    listen: config.grpc.listen,
    threads: config.grpc.threads ?? 1,
    tls: certificate?.initial,
    logLevel: config.log.level,
    serveLastAckedOnNack: config.grpc.serveLastAckedOnNack ?? false,
    server: {
      maxReceiveBytes: config.grpc.maxReceiveBytes,
      maxUnreadBytes: config.grpc.maxUnreadBytes,
      maxBehindMs: config.grpc.maxBehindMs,
      warmingHoldMs: config.grpc.warmingHoldMs,
      overrideTtlMs: config.grpc.overrideTtlMs,
      maxStreams: config.grpc.maxStreams,
      maxConnectionAgeMs: config.grpc.maxConnectionAgeMs,
      maxConnectionAgeGraceMs: config.grpc.maxConnectionAgeGraceMs,
      identityPrefix: config.grpc.tls?.identityPrefix,
      secretsAllowed: secretsAllowedHere,
      implementation: config.grpc.implementation,
    },
    cache: parts.cache,
    registry: parts.registry,
    log: parts.log.child({ component: 'grpc' }),
  });
  parts.teardown.defer('the gRPC listener', () => grpc.close('fleetxds is shutting down'));
  return grpc;
}

/** The Prometheus metrics, with the pipeline's applies, refusals and unreadable trees counted. */
function serverMetrics(
  config: ServerConfig,
  registry: NodeRegistry,
  cache: SnapshotCache,
  pipeline: ConfigPipeline,
  desk: DecisionDesk,
): Metrics {
  const metrics = new Metrics(
    registry,
    cache,
    config.replica?.name,
    () => {
      const a = pipeline.rollout;
      return a && { stage: a.state.stage, halted: a.state.status === 'halted', to: a.state.to };
    },
    () => desk.status(),
  );
  pipeline.events.on('applied', (ms: number) => metrics.applyDuration.observe(ms / 1000));
  pipeline.events.on('rejected', () => metrics.validationFailures.inc());
  pipeline.events.on('unreadable', () => metrics.readFailures.inc());
  return metrics;
}

/** The line that says the server is up: where each listener is, what is served. */
function logServing(
  config: ServerConfig,
  log: Logger,
  ports: { grpc: number; admin: number; rest: number },
  versionId: number | undefined,
): void {
  const at = (listen: string, port: number) => `${splitListen(listen).host}:${port}`;
  log.info(
    {
      grpc: at(config.grpc.listen, ports.grpc),
      admin: at(config.admin.listen, ports.admin),
      rest: config.rest ? at(config.rest.listen, ports.rest) : null,
      files: config.files?.enabled ? config.files.dir : null,
      configDir: config.configDir,
      versionId: versionId ?? null,
    },
    'fleetxds serving',
  );
}

async function assemble(config: ServerConfig, log: Logger, teardown: Teardown): Promise<RunningApp> {
  const grpcCertificate = listenerCertificate('grpc', config.grpc.tls, log);
  const restCertificate = listenerCertificate('rest', config.rest?.tls, log);
  const certificates = [grpcCertificate, restCertificate].flatMap((c) => (c ? [c] : []));
  const stores = openStores(config.database, retentionOf(config.retention));
  teardown.defer('the database', () => stores.close());
  const cache = new SnapshotCache();
  const registry = new NodeRegistry(nackReports(stores, log, (n) => rollouts.nacked(n)));
  const envoyCheck = config.envoyCheck
    ? new EnvoyChecker({ ...config.envoyCheck, workDir: envoyCheckDir(config.database) })
    : undefined;
  await envoyCheck?.removeLeftovers();
  // Modules only some settings use are imported when they are used (pg, fastify, the file renderer):
  // a restart serves its proxies before loading what they do not need.
  const sharedLog = await sharedDecisionLog(config, log);
  const membership = registeredEndpoints(
    stores,
    teardown,
    (service) => pipeline.served.servedService(service)?.registration,
    (services) => pipeline.membersChanged(services),
  );
  const pipeline: ConfigPipeline = new ConfigPipeline(
    stores,
    cache,
    log.child({ component: 'pipeline' }),
    config.configDir,
    {
      envoy: envoyCheck,
      membership,
      fleet: () => connectedFleet([...registry.connected(), ...registry.polling()]),
      // With a shared decision log, the rollout transitions this replica causes go through it.
      ...(sharedLog && { shareTransition: (d, actor) => desk.shareTransition(d, actor) }),
    },
  );
  teardown.defer('applying the tree', () => pipeline.idle());
  teardown.stopFirst('override deadlines', () => pipeline.stop());
  const desk = new DecisionDesk(pipeline, log.child({ component: 'decisions' }), stores.replicaState, sharedLog);
  teardown.defer('decisions under way', () => desk.idle());
  const rollouts = new RolloutDriver(pipeline, cache, registry, stores, log.child({ component: 'rollout' }));
  teardown.stopFirst('the rollout driver', () => rollouts.stop());
  const metrics = serverMetrics(config, registry, cache, pipeline, desk);
  await keepEndpoints(membership, config.replica?.postgres, log, teardown);

  // Serve the last good version before touching the directory (fast restart, survives a broken tree).
  await pipeline.loadLatestFromStore();

  // The first connection to the shared store is awaited, so decisions made while this replica was
  // down are applied before the directory is read; an unreachable store is not waited for: the
  // replica serves what it has and keeps trying.
  if (sharedLog) {
    teardown.defer('the shared decision store', () => sharedLog.close());
    await sharedLog.start();
    await desk.catchUp();
  }

  const sds = logSecretPolicy(config, log);
  const grpc = await startGrpc(config, { cache, registry, log, teardown }, grpcCertificate, sds.grpc);
  metrics.servingThreads(() => grpc.streamsByThread());
  metrics.listenerCertificates(() => certificates);
  // Reads the tree again after a read that could not complete (`reload` is defined below; the
  // retry calls it only after a read it was told about).
  const retry = new ReadRetry(() => void reload(), log);
  teardown.stopFirst('the read retry', () => retry.stop());
  const parts: ListenerParts = { config, log, stores, cache, registry, metrics, teardown };
  const control = adminControl({ stores, pipeline, membership, desk, rollouts, configDir: config.configDir });
  let rest: RestServer | undefined;
  let files: FileRenderer | undefined;
  const admin = await startAdmin(parts, control, { rest: () => rest, files: () => files, retry, certificates });
  const restListener = await startRest(parts, membership, restCertificate, sds.rest);
  rest = restListener.rest;
  const rendering = await renderFiles(config.files, cache, log, teardown);
  files = rendering.files;

  const reload = () =>
    pipeline.applyDirectory(config.configDir).then(
      (outcome) => (retry.settled(outcome, cache.current !== undefined), outcome),
      (err) => (retry.settled(undefined), log.error({ err }, 'apply failed')),
    );
  await readAndWatchTree(config.configDir, config.watch, reload, log, teardown);
  await watchSecretFiles(config.watch, pipeline, cache, log, teardown);
  const reloadCertificates = async () => {
    await Promise.all([
      grpcCertificate?.reload((tls) => grpc.setTls(tls)),
      restCertificate?.reload((tls) => rest!.setTls(tls)),
    ]);
  };
  const certificatePaths = certificates.flatMap((c) => c.paths);
  await watchListenerCertificates(config.watch, certificatePaths, reloadCertificates, log, teardown);
  logServing(config, log, { grpc: grpc.port, admin: admin.port, rest: restListener.port }, cache.current?.versionId);

  return {
    grpcPort: grpc.port,
    grpc,
    adminPort: admin.port,
    restPort: restListener.port,
    rest,
    files,
    stores,
    cache,
    registry,
    pipeline,
    log,
    sharedDecisions: () => desk.status(),
    reload,
    reloadCertificates,
    filesIdle: () => rendering.idle(),
    servingStatus: () =>
      cache.current
        ? `serving version ${cache.current.versionId}`
        : nothingServedReason({ rejection: control.currentRejection(), unreadableTree: retry.unreadable }),
    close: () => teardown.run(log),
  };
}
