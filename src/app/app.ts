/**
 * Wires the stages into a running server. No process globals here (signals, exit codes live in
 * the CLI), so tests can start and stop an app in-process too.
 */
import { connectedClients } from '../model/grpc-compat.ts';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import type { AdminControl } from '../admin/control.ts';
import { ConfigError, secretsAllowed, splitListen } from '../config/server-config.ts';
import type { ServerConfig, TlsSettings } from '../config/server-config.ts';
import { openStores, type Stores } from '../store/database.ts';
import { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { SecretWatcher, TreeWatcher } from '../source/watcher.ts';
import { ReadRetry } from './read-retry.ts';
import { nothingServedReason } from '../shared/diagnostics.ts';
import { ListenerCertificate } from './listener-certificates.ts';
import { NodeRegistry } from '../status/node-registry.ts';
import { serveGrpc, type GrpcServing } from '../transports/grpc/serving.ts';
import { ConfigPipeline } from './pipeline.ts';
import { EnvoyChecker, envoyCheckDir } from '../compile/envoy-check.ts';
import { Metrics } from '../status/metrics.ts';
import { TokenAuth } from '../security/tokens.ts';
import type { RestServer } from '../transports/rest/rest-server.ts';
import { Membership } from '../membership/membership.ts';

/** How often TTLs and drain times are applied to registered endpoints. */
const SWEEP_MS = 200;
/** Registration changes within this window go out as one push. */
const MEMBERS_COALESCE_MS = 20;
import type { FileRenderer, RenderStats } from '../transports/files/file-renderer.ts';
import { RolloutDriver } from './rollout-driver.ts';
import { DecisionDesk } from './decision-desk.ts';
import type { PostgresDecisionLog } from '../decision-log/postgres-log.ts';
import type { SharedDecisionStatus } from '../decision-log/decision.ts';
import { LineBudget } from '../shared/line-budget.ts';
import { retentionOf } from '../store/retention.ts';

/** NACK lines written to the log per minute at most (each is in the NACK log too). */
const NACK_LINES_PER_MINUTE = 60;

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

export async function startApp(
  config: ServerConfig,
  log: Logger = pino({ level: config.log.level }),
): Promise<RunningApp> {
  // fleetxds's own certificates (gRPC, REST): checked before anything starts, served anew when their files change.
  const certificate = (listener: 'grpc' | 'rest', files: TlsSettings | undefined) => {
    if (!files) return undefined;
    try {
      return new ListenerCertificate(listener, files, log);
    } catch (err) {
      throw new ConfigError(`${listener}.tls: ${(err as Error).message}`);
    }
  };
  const grpcCertificate = certificate('grpc', config.grpc.tls);
  const restCertificate = certificate('rest', config.rest?.tls);
  const stores = openStores(config.database, retentionOf(config.retention));
  const cache = new SnapshotCache();
  const nackLines = new LineBudget(NACK_LINES_PER_MINUTE, 60_000);
  const registry = new NodeRegistry((n) => {
    // Every NACK reaches the rollout's gates; the first of a node, type and version is stored.
    rollouts.nacked(n);
    if (!n.report) return;
    const stored = stores.nacks.record({
      at: n.at,
      nodeId: n.stream.nodeId,
      nodeCluster: n.stream.nodeCluster,
      nodeGroup: n.stream.group,
      transport: n.stream.transport,
      typeUrl: n.typeUrl,
      version: n.version,
      nonce: n.nonce,
      errorCode: n.code,
      message: n.message,
    });
    const line = stored ? nackLines.take() : undefined;
    if (line?.allowed)
      log.warn(
        {
          node: n.stream.nodeId,
          group: n.stream.group,
          typeUrl: n.typeUrl,
          version: n.version,
          error: n.message,
          ...(line.droppedBefore ? { nackLinesDropped: line.droppedBefore } : {}),
        },
        'NACK',
      );
  });
  const envoyCheck = config.envoyCheck
    ? new EnvoyChecker({ ...config.envoyCheck, workDir: envoyCheckDir(config.database) })
    : undefined;
  await envoyCheck?.removeLeftovers();
  // Several replicas share operator decisions through PostgreSQL (see DecisionDesk).
  const pg = config.replica?.postgres;
  // Modules only some settings use are imported when they are used (pg, fastify, the file renderer):
  // a restart serves its proxies before loading what they do not need.
  const sharedLog: PostgresDecisionLog | undefined =
    pg &&
    new (await import('../decision-log/postgres-log.ts')).PostgresDecisionLog({
      url: pg.url,
      pollMs: pg.pollMs ?? 1000,
      queryTimeoutMs: pg.queryTimeoutMs ?? 3000,
      replica: config.replica?.name ?? 'fleetxds',
      log: log.child({ component: 'decisions' }),
    });
  // Endpoints registered at run time: restored from the store (each with a fresh TTL), changes
  // coalesced into one EDS push, TTLs and drain times applied every SWEEP_MS. (The pipeline it
  // reports to is made next; nothing calls back before the server serves.)
  const pendingMembers = new Set<string>();
  let membersTimer: NodeJS.Timeout | undefined;
  const membership = new Membership(
    (service) => pipeline.served.servedService(service)?.registration,
    (services) => {
      for (const s of services) pendingMembers.add(s);
      membersTimer ??= setTimeout(() => {
        membersTimer = undefined;
        const changed = new Set(pendingMembers);
        pendingMembers.clear();
        pipeline.membersChanged(changed);
      }, MEMBERS_COALESCE_MS);
    },
    stores.registrations,
  );
  membership.restore();
  const pipeline: ConfigPipeline = new ConfigPipeline(
    stores,
    cache,
    log.child({ component: 'pipeline' }),
    config.configDir,
    {
      envoy: envoyCheck,
      membership,
      grpcClients: () => connectedClients(registry.connected()),
      // With a shared decision log, the rollout transitions this replica causes go through it.
      ...(sharedLog && { shareTransition: (d, actor) => desk.shareTransition(d, actor) }),
    },
  );
  const desk = new DecisionDesk(pipeline, log.child({ component: 'decisions' }), stores.replicaState, sharedLog);
  const rollouts = new RolloutDriver(pipeline, cache, registry, stores, log.child({ component: 'rollout' }));
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

  // Replicas share membership through the PostgreSQL they share decisions through.
  const sharedMembership =
    pg &&
    new (await import('../membership/shared-membership.ts')).SharedMembership(
      pg.url,
      membership,
      log.child({ component: 'membership' }),
      pg.queryTimeoutMs ?? 3000,
    );
  if (sharedMembership) {
    membership.observer = sharedMembership;
    await sharedMembership.start();
  }
  const sweep = setInterval(() => membership.sweep(), SWEEP_MS);
  sweep.unref();

  // Serve the last good version before touching the directory (fast restart, survives a broken tree).
  await pipeline.loadLatestFromStore();

  // The first connection to the shared store is awaited, so decisions made while this replica was
  // down are applied before the directory is read; an unreachable store is not waited for: the
  // replica serves what it has and keeps trying.
  if (sharedLog) {
    await sharedLog.start();
    await desk.catchUp();
  }

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
  const grpc = await serveGrpc({
    listen: config.grpc.listen,
    threads: config.grpc.threads ?? 1,
    tls: grpcCertificate?.initial,
    logLevel: config.log.level,
    serveLastAckedOnNack: config.grpc.serveLastAckedOnNack ?? false,
    server: {
      maxReceiveBytes: config.grpc.maxReceiveBytes,
      maxUnreadBytes: config.grpc.maxUnreadBytes,
      maxBehindMs: config.grpc.maxBehindMs,
      warmingHoldMs: config.grpc.warmingHoldMs,
      maxStreams: config.grpc.maxStreams,
      maxConnectionAgeMs: config.grpc.maxConnectionAgeMs,
      maxConnectionAgeGraceMs: config.grpc.maxConnectionAgeGraceMs,
      identityPrefix: config.grpc.tls?.identityPrefix,
      secretsAllowed: sds.grpc,
    },
    cache,
    registry,
    log: log.child({ component: 'grpc' }),
  });
  const grpcPort = grpc.port;
  metrics.servingThreads(() => grpc.streamsByThread());
  metrics.listenerCertificates(() => [grpcCertificate, restCertificate].flatMap((c) => (c ? [c] : [])));
  let restServer: RestServer | undefined;
  // Reads the tree again after a read that could not complete (`reload` is defined below; the
  // retry calls it only after a read it was told about).
  const retry = new ReadRetry(() => void reload(), log);
  const control: AdminControl = {
    versions: (limit) => stores.revisions.list(limit),
    diff: (a, b) => stores.revisions.diff(a, b),
    pins: () => stores.pins.list(),
    audit: (limit) => stores.audit.list(limit),
    latestRejection: () => stores.rejections.latest(),
    currentRejection: () => (pipeline.refusalIsCurrent ? stores.rejections.latest() : undefined),
    nacks: (nodeId, limit) => stores.nacks.list(nodeId, limit),
    secrets: () => pipeline.served.servedSecrets,
    patches: () => pipeline.served.servedPatches,
    newestGroup: (group) => pipeline.served.newestGroup(group),
    resourceAt: (versionId, group, kind, name) => pipeline.resourceAt(versionId, group, kind, name),
    registrations: () =>
      membership.list().map((r) => ({
        service: r.service,
        address: r.address,
        state: r.state,
        identity: r.identity,
        lastSeen: new Date(r.lastSeen).toISOString(),
        ...(r.weight !== undefined && { weight: r.weight }),
        ...(r.zone !== undefined && { zone: r.zone }),
      })),
    rollback: (versionId, actor) => desk.make({ kind: 'rollback', versionId }, actor),
    pin: (group, versionId, actor) => desk.make({ kind: 'pin', group, versionId }, actor),
    unpin: (group, actor) => desk.make({ kind: 'unpin', group }, actor),
    sharedDecisions: () => desk.status(),
    rollout: () => rollouts.status(),
    rolloutCommand: async (command, actor) => {
      await desk.make({ kind: 'rollout', command }, actor);
      // A promote of the last stage completes the rollout: what it became, not "no rollout".
      return rollouts.current() ?? rollouts.status().last ?? null;
    },
  };
  const admin: FastifyInstance = (await import('../admin/server.ts')).createAdminServer({
    control,
    cache,
    registry,
    log,
    metrics,
    tokens: new TokenAuth(config.admin.tokens ?? []),
    restHeld: config.rest ? () => restServer?.heldCount() ?? 0 : undefined,
    replica: config.replica,
    notReadyWhileUnknown: config.replica?.postgres?.notReadyWhileUnknown ?? false,
    serveLastAckedOnNack: config.grpc.serveLastAckedOnNack ?? false,
    fileFailures: () => [...(files?.failures ?? [])].map(([group, f]) => ({ group, ...f })),
    unreadableTree: () => retry.unreadable,
    listenerCertificates: () =>
      [grpcCertificate, restCertificate].flatMap((c) => {
        if (!c) return [];
        const { subject, fingerprint, notAfter } = c.served;
        return [{ listener: c.listener, subject, fingerprint, notAfter }];
      }),
  });
  const { host, port } = splitListen(config.admin.listen);
  await admin.listen({ host, port });
  const adminPort = (admin.server.address() as { port: number }).port;

  let restPort = 0;
  // Refused registration calls: one log line per 10 s at most, the metric counts each.
  const refusalLines = new LineBudget(1, 10_000);
  if (config.rest) {
    restServer = (await import('../transports/rest/rest-server.ts')).createRestServer({
      cache,
      registry,
      log,
      holdMs: config.rest.holdMs,
      bodyLimit: config.rest.bodyLimit,
      maxHeld: config.rest.maxHeld,
      maxCachedBytes: config.rest.maxCachedBytes,
      pollerExpiryMs: config.rest.pollerExpiryMs,
      refreshDelayMs: config.rest.refreshDelayMs,
      requestTimeoutMs: config.rest.requestTimeoutMs,
      tokens: new TokenAuth(config.rest.tokens ?? []),
      tls: restCertificate && { listener: restCertificate.initial, identityPrefix: config.rest.tls?.identityPrefix },
      secretsAllowed: sds.rest,
      registration: {
        membership,
        audit: (actor, action, detail) => stores.audit.append(actor, action, detail),
        refused: (action, reason, message) => {
          metrics.registrationRefusals.inc({ action, reason });
          const line = refusalLines.take();
          if (line.allowed)
            log.warn(
              { action, reason, ...(line.droppedBefore ? { refusalLinesDropped: line.droppedBefore } : {}) },
              `registration ${action} refused: ${message}`,
            );
        },
      },
    });
    const r = splitListen(config.rest.listen);
    await restServer.app.listen({ host: r.host, port: r.port });
    restPort = (restServer.app.server.address() as { port: number }).port;
  }

  // Files are rendered after each publish, one render at a time (a newer version supersedes).
  let files: FileRenderer | undefined;
  let rendering: Promise<RenderStats | undefined> = Promise.resolve(undefined);
  if (config.files?.enabled) {
    const renderer = (files = new (await import('../transports/files/file-renderer.ts')).FileRenderer({
      dir: config.files.dir,
      envoyDir: config.files.envoyDir,
      format: config.files.format,
      layout: config.files.layout,
      log: log.child({ component: 'files' }),
    }));
    const render = () => {
      rendering = rendering
        .then(() => (cache.current ? renderer.render(cache.current) : undefined))
        .catch((err) => {
          log.error({ err }, 'rendering files failed');
          return undefined;
        });
    };
    cache.onPublish(render);
    if (cache.current) render();
  }

  const reload = () =>
    pipeline.applyDirectory(config.configDir).then(
      (outcome) => (retry.settled(outcome, cache.current !== undefined), outcome),
      (err) => (retry.settled(undefined), log.error({ err }, 'apply failed')),
    );
  // The watch is armed while the tree is first read, and the tree is read once more when it is:
  // a file written between the read and the watch would otherwise wait for the periodic reconcile.
  let watcher: TreeWatcher | undefined;
  if (config.watch.enabled) {
    watcher = new TreeWatcher({
      dir: config.configDir,
      debounceMs: config.watch.debounceMs,
      maxWaitMs: config.watch.maxWaitMs,
      reconcileMs: config.watch.reconcileMs,
      onChange: () => void reload(),
      onError: (err) => log.error({ err }, 'watcher error'),
    });
  }
  const watching = watcher?.start();
  await reload();
  if (watching) {
    await watching;
    await reload(); // an unchanged tree is only stat'ed
  }
  // Certificate rotation: watch the folders of the served secrets' files.
  let secretWatcher: SecretWatcher | undefined;
  if (config.watch.enabled) {
    secretWatcher = new SecretWatcher(
      () => pipeline.served.secretFiles,
      () => void pipeline.reloadSecrets().catch((err) => log.error({ err }, 'secret reload failed')),
      config.watch.debounceMs,
      (err) => log.error({ err }, 'secret watcher error'),
    );
    await secretWatcher.sync();
    cache.onPublish(() => void secretWatcher!.sync().catch((err) => log.error({ err }, 'secret watcher sync failed')));
  }
  const reloadCertificates = async () => {
    await Promise.all([
      grpcCertificate?.reload((tls) => grpc.setTls(tls)),
      restCertificate?.reload((tls) => restServer!.setTls(tls)),
    ]);
  };
  let certificateWatcher: SecretWatcher | undefined;
  if (config.watch.enabled && (grpcCertificate || restCertificate)) {
    certificateWatcher = new SecretWatcher(
      () => [...(grpcCertificate?.paths ?? []), ...(restCertificate?.paths ?? [])],
      () => void reloadCertificates().catch((err) => log.error({ err }, 'listener certificate reload failed')),
      config.watch.debounceMs,
      (err) => log.error({ err }, 'listener certificate watcher error'),
    );
    await certificateWatcher.sync();
  }
  log.info(
    {
      grpc: `${splitListen(config.grpc.listen).host}:${grpcPort}`,
      admin: `${host}:${adminPort}`,
      rest: config.rest ? `${splitListen(config.rest.listen).host}:${restPort}` : null,
      files: config.files?.enabled ? config.files.dir : null,
      configDir: config.configDir,
      versionId: cache.current?.versionId ?? null,
    },
    'fleetxds serving',
  );

  return {
    grpcPort,
    grpc,
    adminPort,
    restPort,
    rest: restServer,
    files,
    stores,
    cache,
    registry,
    pipeline,
    log,
    sharedDecisions: () => desk.status(),
    reload,
    reloadCertificates,
    filesIdle: () => rendering,
    servingStatus: () =>
      cache.current
        ? `serving version ${cache.current.versionId}`
        : nothingServedReason({ rejection: control.currentRejection(), unreadableTree: retry.unreadable }),
    async close() {
      clearInterval(sweep);
      clearTimeout(membersTimer);
      await sharedMembership?.close();
      rollouts.stop();
      retry.stop();
      await watcher?.close();
      await secretWatcher?.close();
      await certificateWatcher?.close();
      restServer?.releaseAll();
      await restServer?.app.close();
      await rendering;
      await admin.close();
      await grpc.close('fleetxds is shutting down');
      await sharedLog?.close();
      await desk.idle();
      await pipeline.idle();
      stores.close();
    },
  };
}
