/**
 * REST-JSON polling (docs/xds-protocol.md §3): `POST /v3/discovery:<type>` with a JSON
 * DiscoveryRequest, answered with a JSON DiscoveryResponse.
 *  - no `version_info` (first poll): 200 with the full state for the node, unless this connection
 *    was just sent that state (the proxy rejected it: below);
 *  - `version_info` equal to the current version: 304 at once, or, for a proxy that opted into
 *    long polling (node metadata `fleetxds.long_poll_ms`, written by `fleetxds bootstrap`), held
 *    until something changes (then 200) or until the smaller of that and `holdMs`, then 304.
 *    Envoy counts a poll outliving its request_timeout (1 s by default) as a failure;
 *  - clusters/listeners: full state; endpoints/routes/secrets: exactly the named resources;
 *  - every subscription has its own version: Envoy polls each EDS cluster and each RDS route
 *    configuration separately, each with the version it last accepted;
 *  - REST has no NACK: a subscription that keeps reporting the version it had before a newer one
 *    was sent rejected it, and that is recorded as an inferred NACK. A subscription that goes
 *    back to no version after having accepted one is a restarted proxy: a new run of the node,
 *    whose earlier NACKs no longer describe it;
 *  - config sources in served resources name the proxy's own REST cluster (its node metadata's
 *    `fleetxds.xds_cluster`, else the Host Envoy sends, which is that cluster's name).
 * Response bodies are serialized once per (group, type, selection, variant, version) and shared.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Server as HttpsServer } from 'node:https';
import type { Logger } from 'pino';
import { longPollMs } from '../../bootstrap/config-source.ts';
import type { NodeIdentity } from '../../model/node-groups.ts';
import { listenerOptions, type ListenerTls } from '../../security/listener-tls.ts';
import { checkNodeIdentity, clientCertificateOf, verifiedPeerCertificate } from '../../security/node-identity.ts';
import type { TokenAuth } from '../../security/tokens.ts';
import { FleetError } from '../../shared/errors.ts';
import { fastifyLogger } from '../../shared/fastify-logger.ts';
import { restVariant, xdsClusterName, type ConfigSourceVariant } from '../../snapshot/config-sources.ts';
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import { groupSnapshotFor, type PublishedConfig, type SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import type { NodeRegistry, StreamStatus } from '../../status/node-registry.ts';
import { RESOURCE_TYPES, TypeUrls, kindOfRestPath, type ResourceKind } from '../../xds/resource-types.ts';
import { REST_XDS_CLUSTER } from '../../xds/xds-clusters.ts';
import { answered, pollAnswer, releasesHeld, type PollSubscription } from '../rest-poll.ts';
import { SECRETS_REFUSED } from '../stream-base.ts';
import { HeldPolls } from './held-polls.ts';
import { parseRequest } from './poll-request.ts';
import { Pollers } from './pollers.ts';
import { registrationRoutes, type RegistrationApi } from './registration-routes.ts';
import { restSelection, selectionKey, type Selection } from './selections.ts';

export { restSelection, selectionKey } from './selections.ts';

export interface RestOptions {
  cache: SnapshotCache;
  registry: NodeRegistry;
  log: Logger;
  holdMs: number;
  bodyLimit: number;
  maxHeld: number;
  /** Bytes of response bodies kept per type snapshot (restSelection). */
  maxCachedBytes: number;
  /** How long a silent node stays in the status (default from the hold and refresh delay). */
  pollerExpiryMs?: number;
  /** refresh_delay given to REST config sources in served resources. */
  refreshDelayMs: number;
  /** request_timeout given to them for proxies that opted into long polling (> holdMs). */
  requestTimeoutMs: number;
  /** Optional bearer tokens (for pollers that can send headers; Envoy cannot: use mTLS). */
  tokens?: TokenAuth;
  /** Whether SDS may be served (see secretsAllowed in the settings). */
  secretsAllowed?: boolean;
  /** HTTPS, optionally with client certificates bound to node ids. */
  tls?: { listener: ListenerTls; identityPrefix?: string };
  /** Endpoints registering at run time (the registration API). */
  registration?: RegistrationApi;
}

/** One variant per (proxy's cluster name, long polling or not), shared by every poll that needs it. */
class Variants {
  private readonly byKey = new Map<string, ConfigSourceVariant>();

  constructor(private readonly timing: { refreshDelayMs: number; requestTimeoutMs: number }) {}

  of(clusterName: string, longPoll: boolean): ConfigSourceVariant {
    const key = `${clusterName}|${longPoll}`;
    let v = this.byKey.get(key);
    if (!v) {
      // Cluster names come from clients: the count is bounded.
      if (this.byKey.size >= 1024) this.byKey.clear();
      v = restVariant(clusterName, {
        refreshDelayMs: this.timing.refreshDelayMs,
        requestTimeoutMs: longPoll ? this.timing.requestTimeoutMs : undefined,
      });
      this.byKey.set(key, v);
    }
    return v;
  }
}

export interface RestServer {
  app: FastifyInstance;
  /** New connections get this certificate, key and CA; open ones keep theirs (an HTTPS server only). */
  setTls(tls: ListenerTls): void;
  heldCount(): number;
  /** Answers every held poll with 304 (used on shutdown). */
  releaseAll(): void;
}

function restFastify(opts: RestOptions): FastifyInstance {
  const app = Fastify({
    ...(opts.tls ? { https: listenerOptions(opts.tls.listener) } : {}),
    // Fastify's own per-request lines only from warn up; fleetxds's lines follow the configured level.
    loggerInstance: fastifyLogger(opts.log.child({ component: 'rest' }, { level: 'warn' })),
    // No child logger per request: a held poll would keep one (about 1 KB with its bound level
    // methods) for as long as it is held, and fleetxds's own lines name the node instead.
    childLoggerFactory: (logger) => logger,
    bodyLimit: opts.bodyLimit,
    // Envoy sets Host to the cluster name; never route on it.
    requestTimeout: opts.holdMs + 30_000,
    return503OnClosing: true,
  });
  // Envoy always sends application/json; anything else is refused with 415.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const status =
      err instanceof FleetError ? err.httpStatus : err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
    if (status >= 500) opts.log.error({ err }, 'REST request failed');
    reply.code(status).send({ error: err.message });
  });
  return app;
}

/** The node's group and what it is served (its stage's version during a rollout), per poll. */
function servedTo(cfg: PublishedConfig, node: NodeIdentity) {
  const group = cfg.resolver.resolve(node);
  return { group, cfg, ...groupSnapshotFor(cfg, node, group) };
}

/** The refusal of a poll before its node is looked at: an unknown path, no token, secrets not allowed. */
type PollCheck = { kind: ResourceKind } | { status: 401 | 403 | 404; error: string };

function pollRefusal(opts: RestOptions, call: string, authorization: string | undefined): PollCheck {
  const m = /^discovery:([a-z_-]+)$/.exec(call);
  const kind = m?.[1] ? kindOfRestPath(m[1]) : undefined;
  if (!kind) {
    const served = RESOURCE_TYPES.map((t) => `/v3/discovery:${t.restPath}`).join(', ');
    return { status: 404, error: `no REST discovery at /v3/${call} (served: ${served})` };
  }
  if (opts.tokens?.enabled && !opts.tokens.check(authorization))
    return { status: 401, error: 'a bearer token is required' };
  if (kind === 'secret' && !opts.secretsAllowed) return { status: 403, error: SECRETS_REFUSED };
  return { kind };
}

export function createRestServer(opts: RestOptions): RestServer {
  const app = restFastify(opts);
  const pollers = new Pollers(opts);
  const variants = new Variants(opts);

  /** A 200: the subscription now waits for the proxy to report `sel.version`. */
  const sendSelection = (
    reply: FastifyReply,
    status: StreamStatus,
    sub: PollSubscription,
    t: TypeSnapshot,
    sel: Selection,
  ) => {
    answered(sub, sel.version, pollers.connection(reply.request.raw.socket).id);
    opts.registry.sent(status, TypeUrls[t.kind], t.version, '');
    reply.code(200).type('application/json').send(sel.body);
  };
  const held = new HeldPolls((h, { t, sel }) => sendSelection(h.reply, h.status, h.sub, t, sel));

  opts.cache.onPublish((cfg) => {
    // Re-resolve each held node: a model change can also move nodes between groups.
    for (const h of held.list()) {
      const t = servedTo(cfg, h.node).snapshot?.types[h.kind];
      if (!t) continue;
      const sel = restSelection(t, h.names, h.variant, opts.maxCachedBytes);
      if (releasesHeld(h.sub, h.version, sel.version)) held.answer(h, { t, sel });
      else pollers.maybeAcked(h.status, t);
    }
  });

  // Subscriptions a proxy stopped polling (a removed cluster's EDS), and proxies that went away.
  const staleMs = opts.pollerExpiryMs ?? Math.max(60_000, 2 * (opts.holdMs + 2 * opts.refreshDelayMs));
  const sweep = setInterval(() => pollers.expire(Date.now() - staleMs), Math.min(Math.max(staleMs / 2, 50), 30_000));
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  if (opts.registration) registrationRoutes(app, opts.registration);

  const poll = (req: FastifyRequest<{ Params: { call: string } }>, reply: FastifyReply, kind: ResourceKind): void => {
    const { node, names, version } = parseRequest(req.body, kind);
    const cert = verifiedPeerCertificate(req.raw.socket);
    if (opts.tls?.identityPrefix) {
      const refusal = checkNodeIdentity(node, cert, opts.tls.identityPrefix);
      if (refusal) return void reply.code(403).send({ error: refusal });
    }
    const at = opts.cache.current ? servedTo(opts.cache.current, node) : undefined;
    if (!at) return void reply.code(503).send({ error: 'no configuration applied yet' });
    const status = opts.registry.poller({
      nodeId: node.id,
      nodeCluster: node.cluster,
      ...(node.locality && { locality: node.locality }),
      group: at.group,
      transport: 'rest',
      peer: req.ip,
      userAgent: node.userAgent,
      authenticated: Boolean(opts.tls?.identityPrefix) || Boolean(opts.tokens?.enabled),
      ...(cert ? { clientCertificate: clientCertificateOf(cert) } : {}),
    });
    const key = `${kind}\u0001${selectionKey(kind, names)}`;
    const sub = pollers.observe(status, kind, key, version, req.raw.socket);
    opts.log.debug({ node: node.id, kind, names: names.length, version }, 'REST poll');

    // Long polling only for proxies that said their request_timeout allows it.
    const holdMs = Math.min(opts.holdMs, longPollMs(node.metadata));
    const variant = variants.of(xdsClusterName(node.metadata, req.headers.host, REST_XDS_CLUSTER), holdMs > 0);
    status.stage = at.stage;
    const t = at.snapshot!.types[kind];
    const sel = restSelection(t, names, variant, opts.maxCachedBytes);
    if (pollAnswer(sub, version, sel.version) === 'send') return sendSelection(reply, status, sub, t, sel);
    pollers.maybeAcked(status, t);
    if (holdMs === 0 || held.size >= opts.maxHeld) return void reply.code(304).send();
    // Unchanged: hold until a change releases it, or answer 304 before the proxy's request_timeout.
    // The parsed body is not needed any more (the node's identity and names are kept).
    req.body = undefined;
    held.hold({ node, status, kind, names, variant, version, sub, reply }, holdMs);
  };

  // find-my-way cannot put a parameter right after a literal ':', so take the whole segment.
  // Not async, and never returning the reply (a thenable): a held poll then costs no pending
  // promise; fastify waits for reply.send().
  app.post<{ Params: { call: string } }>('/v3/:call', (req, reply): void => {
    const checked = pollRefusal(opts, req.params.call, req.headers.authorization);
    if ('error' in checked) {
      if (checked.status === 401) void reply.header('www-authenticate', 'Bearer');
      return void reply.code(checked.status).send({ error: checked.error });
    }
    poll(req, reply, checked.kind);
  });

  return {
    app,
    setTls(next) {
      if (!opts.tls) throw new Error('this REST server does not serve TLS');
      (app.server as HttpsServer).setSecureContext(next);
    },
    heldCount: () => held.size,
    releaseAll: () => held.releaseAll(),
  };
}
