import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AdminControl } from '../admin/control.ts';
import { splitListen, type ServerConfig } from '../config/server-config.ts';
import type { Membership } from '../membership/membership.ts';
import { TokenAuth } from '../security/tokens.ts';
import { LineBudget } from '../shared/line-budget.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { Metrics } from '../status/metrics.ts';
import type { NodeRegistry } from '../status/node-registry.ts';
import type { Stores } from '../store/database.ts';
import type { FileRenderer } from '../transports/files/file-renderer.ts';
import type { RestServer } from '../transports/rest/rest-server.ts';
import type { ListenerCertificate } from './listener-certificates.ts';
import type { ReadRetry } from './read-retry.ts';
import type { Teardown } from './teardown.ts';

/** What both HTTP listeners are built from. */
export interface ListenerParts {
  config: ServerConfig;
  log: Logger;
  stores: Stores;
  cache: SnapshotCache;
  registry: NodeRegistry;
  metrics: Metrics;
  teardown: Teardown;
}

/** Listens on `host:port` (port 0: a free one) and resolves the port bound. */
async function listen(app: FastifyInstance, address: string): Promise<number> {
  const { host, port } = splitListen(address);
  await app.listen({ host, port });
  return (app.server.address() as { port: number }).port;
}

/** The admin API, status page and metrics, listening. */
export async function startAdmin(
  parts: ListenerParts,
  control: AdminControl,
  more: {
    rest: () => RestServer | undefined;
    files: () => FileRenderer | undefined;
    retry: ReadRetry;
    certificates: readonly ListenerCertificate[];
  },
): Promise<{ admin: FastifyInstance; port: number }> {
  const { config, log, cache, registry, metrics, teardown } = parts;
  const admin = (await import('../admin/server.ts')).createAdminServer({
    control,
    cache,
    registry,
    log,
    metrics,
    tokens: new TokenAuth(config.admin.tokens ?? []),
    restHeld: config.rest ? () => more.rest()?.heldCount() ?? 0 : undefined,
    replica: config.replica,
    notReadyWhileUnknown: config.replica?.postgres?.notReadyWhileUnknown ?? false,
    serveLastAckedOnNack: config.grpc.serveLastAckedOnNack ?? false,
    fileFailures: () => [...(more.files()?.failures ?? [])].map(([group, f]) => ({ group, ...f })),
    unreadableTree: () => more.retry.unreadable,
    listenerCertificates: () =>
      more.certificates.map((c) => {
        const { subject, fingerprint, notAfter } = c.served;
        return { listener: c.listener, subject, fingerprint, notAfter };
      }),
  });
  teardown.defer('the admin listener', () => admin.close());
  return { admin, port: await listen(admin, config.admin.listen) };
}

/** REST-JSON polling and the registration API, listening (when `rest` is configured). */
export async function startRest(
  parts: ListenerParts,
  membership: Membership,
  certificate: ListenerCertificate | undefined,
  secretsAllowed: boolean,
): Promise<{ rest?: RestServer; port: number }> {
  const { config, log, stores, cache, registry, metrics, teardown } = parts;
  if (!config.rest) return { port: 0 };
  // Refused registration calls: one log line per 10 s at most, the metric counts each.
  const refusalLines = new LineBudget(1, 10_000);
  const rest = (await import('../transports/rest/rest-server.ts')).createRestServer({
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
    tls: certificate && { listener: certificate.initial, identityPrefix: config.rest.tls?.identityPrefix },
    secretsAllowed,
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
  // Held polls are answered (304) before the listener closes, so pollers ask again at once elsewhere.
  teardown.defer('the REST listener', async () => {
    rest.releaseAll();
    await rest.app.close();
  });
  return { rest, port: await listen(rest.app, config.rest.listen) };
}
