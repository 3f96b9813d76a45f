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
import {
  answered,
  awaitingReport,
  newPollSubscription,
  observePoll,
  pollAnswer,
  releasesHeld,
  type PollSubscription,
} from '../rest-poll.ts';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { fastifyLogger } from '../../shared/fastify-logger.ts';
import type { Logger } from 'pino';
import type { NodeIdentity } from '../../model/node-groups.ts';
import type { ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { listenerOptions, type ListenerTls } from '../../security/listener-tls.ts';
import type { TokenAuth } from '../../security/tokens.ts';
import { checkNodeIdentity, clientCertificateOf, verifiedPeerCertificate } from '../../security/node-identity.ts';
import { registrationRoutes, type RegistrationApi } from './registration-routes.ts';
import { shortHash } from '../../shared/hash.ts';
import {
  restVariant,
  retargetConfigSources,
  xdsClusterName,
  type ConfigSourceVariant,
} from '../../snapshot/config-sources.ts';
import { longPollMs } from '../../bootstrap/config-source.ts';
import { REST_XDS_CLUSTER } from '../../xds/xds-clusters.ts';
import { SECRETS_REFUSED } from '../stream-base.ts';
import { displayUserAgent, nodeLimitViolation } from '../../security/node-limits.ts';
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import { groupSnapshotFor, type PublishedConfig, type SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import { deriveWithin } from '../../snapshot/derived.ts';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import type { NodeRegistry, StreamStatus } from '../../status/node-registry.ts';
import { recordReply } from '../replies.ts';
import { encodeJson } from '../../xds/proto-json.ts';
import { nestedDeeperThan } from '../../shared/json-depth.ts';
import {
  DISCOVERY_REQUEST,
  RESOURCE_TYPES,
  ResourceTypes,
  TypeUrls,
  kindOfRestPath,
  type ResourceKind,
} from '../../xds/resource-types.ts';

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

interface Selection {
  version: string;
  /** The JSON response, encoded once: thousands of released polls share these bytes. */
  body: Buffer;
}

/**
 * A poll held until a change or its deadline. Thousands are held at once, so a held poll is this
 * record, its timer and what the HTTP server keeps for the open request: no promise, no closure.
 */
interface Held {
  node: NodeIdentity;
  status: StreamStatus;
  kind: ResourceKind;
  names: string[];
  variant: ConfigSourceVariant;
  version: string;
  sub: PollSubscription;
  reply: FastifyReply;
  timer?: NodeJS.Timeout;
}

/**
 * Selection bodies kept per type snapshot, computed once per version and shared by every poll. A
 * selection is keyed by what the client sends (names, its xDS cluster), so what is kept is bounded
 * in count and in bytes: a body past the bound is made for its poll and not held.
 */
const MAX_SELECTIONS = 10_000;

export function selectionKey(kind: ResourceKind, names: readonly string[]): string {
  return ResourceTypes[kind].wildcard ? '*' : [...new Set(names)].sort().join('\u0000');
}

export function restSelection(
  t: TypeSnapshot,
  names: readonly string[],
  variant: ConfigSourceVariant,
  maxCachedBytes: number,
): Selection {
  const key = selectionKey(t.kind, names);
  return deriveWithin(
    t,
    'rest-selection',
    `${variant.key}\u0001${key}`,
    makeSelection,
    { key, variant },
    {
      entries: MAX_SELECTIONS,
      bytes: maxCachedBytes,
      weigh: (s) => s.body.length + key.length,
    },
  );
}

function makeSelection(t: TypeSnapshot, { key, variant }: { key: string; variant: ConfigSourceVariant }): Selection {
  const full = ResourceTypes[t.kind].wildcard;
  const picked = full ? t.wildcard : key.split('\u0000').flatMap((n) => t.resources.get(n) ?? []);
  // Full-state types carry the type version; a named selection gets a version of its own, so a
  // change to some other cluster's endpoints does not wake this poller.
  const version = full ? t.version : shortHash(picked.map((r) => `${r.name}\u0000${r.version}`).join('\n'));
  const resources = picked.map((r) => ({
    '@type': TypeUrls[t.kind],
    ...retargetConfigSources(r.json, variant.sourceFor),
  }));
  const body = Buffer.from(JSON.stringify({ version_info: version, resources, type_url: TypeUrls[t.kind] }));
  return { version, body };
}

interface Connection {
  id: number;
  /** Polls it carried so far. */
  polls: number;
}

const CONNECTIONS = new WeakMap<object, Connection>();
let nextConnectionId = 1;

/** A client connection, numbered: a proxy that restarted polls over connections it just opened. */
function connectionOf(socket: object): Connection {
  let c = CONNECTIONS.get(socket);
  if (!c) CONNECTIONS.set(socket, (c = { id: nextConnectionId++, polls: 0 }));
  return c;
}

function countPoll(c: Connection): Connection {
  c.polls++;
  return c;
}

interface PollerState {
  subs: Map<string, PollSubscription>;
}

const MAX_SUBSCRIPTIONS_PER_NODE = 20_000;

/** Far more than any DiscoveryRequest needs (node metadata is the deepest part); converters recurse. */
const MAX_JSON_DEPTH = 64;

interface PollRequest {
  node: NodeIdentity & { userAgent: string };
  names: string[];
  version: string;
}

interface JsonNode {
  id?: string;
  cluster?: string;
  metadata?: Record<string, unknown>;
  user_agent_name?: string;
  userAgentName?: string;
  user_agent_version?: string;
  userAgentVersion?: string;
}

interface JsonDiscoveryRequest {
  type_url?: string;
  typeUrl?: string;
  node?: JsonNode;
  resource_names?: string[];
  resourceNames?: string[];
  version_info?: string;
  versionInfo?: string;
}

function parseRequest(body: unknown, kind: ResourceKind): PollRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new FleetError(ErrorCodes.BAD_REQUEST, 'the body must be a JSON DiscoveryRequest object');
  if (nestedDeeperThan(body, MAX_JSON_DEPTH))
    throw new FleetError(ErrorCodes.BAD_REQUEST, `the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const { issues } = encodeJson(DISCOVERY_REQUEST, body);
  if (issues.length)
    throw new FleetError(
      ErrorCodes.BAD_REQUEST,
      'invalid DiscoveryRequest: ' +
        issues
          .slice(0, 5)
          .map((i) => `${i.path || '(root)'}: ${i.message}`)
          .join('; '),
    );
  // A DiscoveryRequest in proto3 JSON (checked against the proto above), in either field spelling.
  const b = body as JsonDiscoveryRequest;
  const typeUrl = b.type_url ?? b.typeUrl;
  if (typeUrl && typeUrl !== TypeUrls[kind])
    throw new FleetError(ErrorCodes.BAD_REQUEST, `type_url ${typeUrl} does not match this path (${TypeUrls[kind]})`);
  const node = b.node;
  if (!node?.id) throw new FleetError(ErrorCodes.BAD_REQUEST, 'node.id is required');
  const identity = {
    id: String(node.id),
    cluster: String(node.cluster ?? ''),
    metadata: node.metadata ?? {},
  };
  const tooLarge = nodeLimitViolation(identity);
  if (tooLarge) throw new FleetError(ErrorCodes.BAD_REQUEST, tooLarge);
  return {
    node: {
      ...identity,
      userAgent: displayUserAgent(
        [node.user_agent_name ?? node.userAgentName, node.user_agent_version ?? node.userAgentVersion]
          .filter(Boolean)
          .join('/'),
      ),
    },
    names: b.resource_names ?? b.resourceNames ?? [],
    version: String(b.version_info ?? b.versionInfo ?? ''),
  };
}

export interface RestServer {
  app: FastifyInstance;
  /** New connections get this certificate, key and CA; open ones keep theirs (an HTTPS server only). */
  setTls(tls: ListenerTls): void;
  heldCount(): number;
  /** Answers every held poll with 304 (used on shutdown). */
  releaseAll(): void;
}

export function createRestServer(opts: RestOptions): RestServer {
  const tls = opts.tls;
  const app = Fastify({
    ...(tls
      ? {
          https: listenerOptions(tls.listener),
        }
      : {}),
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
  const held = new Map<ServerResponse, Held>();
  /** One listener for every held poll: the proxy went away (or its connection did) while held. */
  function onHeldClose(this: ServerResponse) {
    const h = held.get(this);
    if (h) {
      held.delete(this);
      clearTimeout(h.timer);
    }
  }
  const pollers = new Map<StreamStatus, PollerState>();
  // One variant per (proxy's cluster name, long polling or not), shared by every poll that needs it.
  const variants = new Map<string, ConfigSourceVariant>();
  const variantFor = (clusterName: string, longPoll: boolean): ConfigSourceVariant => {
    const key = `${clusterName}|${longPoll}`;
    let v = variants.get(key);
    if (!v) {
      if (variants.size >= 1024) variants.clear();
      v = restVariant(clusterName, {
        refreshDelayMs: opts.refreshDelayMs,
        requestTimeoutMs: longPoll ? opts.requestTimeoutMs : undefined,
      });
      variants.set(key, v);
    }
    return v;
  };
  // Envoy always sends application/json; anything else is refused with 415.
  app.removeContentTypeParser('text/plain');

  /** A 200: the subscription now waits for the proxy to report `sel.version`. */
  const sendSelection = (
    reply: FastifyReply,
    status: StreamStatus,
    sub: PollSubscription,
    t: TypeSnapshot,
    sel: Selection,
  ) => {
    answered(sub, sel.version, connectionOf(reply.request.raw.socket).id);
    opts.registry.sent(status, TypeUrls[t.kind], t.version, '');
    reply.code(200).type('application/json').send(sel.body);
  };

  const answer = (h: Held, change?: { t: TypeSnapshot; sel: Selection }) => {
    clearTimeout(h.timer);
    held.delete(h.reply.raw);
    h.reply.raw.off('close', onHeldClose);
    if (!h.reply.sent && !h.reply.raw.destroyed) {
      if (!change) h.reply.code(304).send();
      else sendSelection(h.reply, h.status, h.sub, change.t, change.sel);
    }
  };

  /** The node's group and what it is served (its stage's version during a rollout), per poll. */
  const servedTo = (cfg: PublishedConfig, node: NodeIdentity) => {
    const group = cfg.resolver.resolve(node);
    return { group, cfg, ...groupSnapshotFor(cfg, node, group) };
  };
  const current = (node: NodeIdentity) => (opts.cache.current ? servedTo(opts.cache.current, node) : undefined);

  /** The type counts as ACKed at `t` once every subscription of it reports its current selection. */
  const maybeAcked = (status: StreamStatus, state: PollerState, t: TypeSnapshot) => {
    const typeUrl = TypeUrls[t.kind];
    if (status.types[typeUrl]?.ackedVersion === t.version) return;
    for (const sub of state.subs.values()) if (sub.kind === t.kind && awaitingReport(sub)) return;
    recordReply(opts, status, status.group, { kind: t.kind, version: t.version, nonce: '', snapshot: t });
  };

  /** Reads what a poll's version says about the subscription's last answer (ACK, inferred NACK, restart). */
  const observe = (
    status: StreamStatus,
    state: PollerState,
    kind: ResourceKind,
    key: string,
    version: string,
    connection: Connection,
  ): PollSubscription => {
    let sub = state.subs.get(key);
    if (!sub) {
      if (state.subs.size >= MAX_SUBSCRIPTIONS_PER_NODE) state.subs.delete(state.subs.keys().next().value as string);
      state.subs.set(key, (sub = newPollSubscription(kind, 0)));
    }
    const event = observePoll(sub, version, connection, Date.now());
    if (event.type === 'restarted') {
      // A new run of the proxy, not a rejection.
      opts.registry.newRun(status);
      state.subs.clear();
      state.subs.set(key, (sub = newPollSubscription(kind, Date.now())));
    } else if (event.type === 'rejected') {
      const message =
        `inferred: node reports version "${event.reported || '(none)'}" after receiving "${event.sent}"; ` +
        `REST carries no error detail, see the proxy's log ("REST config for ... rejected")`;
      recordReply(opts, status, status.group, { kind, version: event.sent, nonce: '', error: { code: 0, message } });
    }
    return sub;
  };

  opts.cache.onPublish((cfg) => {
    // Re-resolve each held node: a model change can also move nodes between groups.
    for (const h of [...held.values()]) {
      const t = servedTo(cfg, h.node).snapshot?.types[h.kind];
      if (!t) continue;
      const sel = restSelection(t, h.names, h.variant, opts.maxCachedBytes);
      if (releasesHeld(h.sub, h.version, sel.version)) answer(h, { t, sel });
      else maybeAcked(h.status, pollers.get(h.status)!, t);
    }
  });

  // Subscriptions a proxy stopped polling (a removed cluster's EDS), and proxies that went away.
  const staleMs = opts.pollerExpiryMs ?? Math.max(60_000, 2 * (opts.holdMs + 2 * opts.refreshDelayMs));
  const sweep = setInterval(
    () => {
      const before = Date.now() - staleMs;
      for (const [status, state] of pollers) {
        for (const [key, sub] of state.subs) if (sub.lastPollAt < before) state.subs.delete(key);
        if (state.subs.size === 0) {
          pollers.delete(status);
          opts.registry.expirePoller(status);
        }
      }
    },
    Math.min(Math.max(staleMs / 2, 50), 30_000),
  );
  sweep.unref();
  app.addHook('onClose', async () => clearInterval(sweep));

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const status =
      err instanceof FleetError ? err.httpStatus : err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
    if (status >= 500) opts.log.error({ err }, 'REST request failed');
    reply.code(status).send({ error: err.message });
  });

  if (opts.registration) registrationRoutes(app, opts.registration);

  // find-my-way cannot put a parameter right after a literal ':', so take the whole segment.
  // Not async, and never returning the reply (a thenable): a held poll then costs no pending
  // promise; fastify waits for reply.send().
  app.post<{ Params: { call: string } }>('/v3/:call', (req, reply): void => {
    const m = /^discovery:([a-z_-]+)$/.exec(req.params.call);
    const kind = m?.[1] ? kindOfRestPath(m[1]) : undefined;
    if (!kind)
      return void reply.code(404).send({
        error: `no REST discovery at /v3/${req.params.call} (served: ${RESOURCE_TYPES.map((t) => t.restPath)
          .map((t) => `/v3/discovery:${t}`)
          .join(', ')})`,
      });
    if (opts.tokens?.enabled && !opts.tokens.check(req.headers.authorization))
      return void reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'a bearer token is required' });
    if (kind === 'secret' && !opts.secretsAllowed) return void reply.code(403).send({ error: SECRETS_REFUSED });
    const { node, names, version } = parseRequest(req.body, kind);
    const cert = verifiedPeerCertificate(req.raw.socket);
    if (tls?.identityPrefix) {
      const refusal = checkNodeIdentity(node, cert, tls.identityPrefix);
      if (refusal) return void reply.code(403).send({ error: refusal });
    }
    const at = current(node);
    if (!at) return void reply.code(503).send({ error: 'no configuration applied yet' });
    const status = opts.registry.poller({
      nodeId: node.id,
      nodeCluster: node.cluster,
      group: at.group,
      transport: 'rest',
      peer: req.ip,
      userAgent: node.userAgent,
      authenticated: Boolean(tls?.identityPrefix) || Boolean(opts.tokens?.enabled),
      ...(cert ? { clientCertificate: clientCertificateOf(cert) } : {}),
    });
    let state = pollers.get(status);
    if (!state) pollers.set(status, (state = { subs: new Map() }));
    const sub = observe(
      status,
      state,
      kind,
      `${kind}\u0001${selectionKey(kind, names)}`,
      version,
      countPoll(connectionOf(req.raw.socket)),
    );
    opts.log.debug({ node: node.id, kind, names: names.length, version }, 'REST poll');

    // Long polling only for proxies that said their request_timeout allows it.
    const holdMs = Math.min(opts.holdMs, longPollMs(node.metadata));
    const variant = variantFor(xdsClusterName(node.metadata, req.headers.host, REST_XDS_CLUSTER), holdMs > 0);
    status.stage = at.stage;
    const t = at.snapshot!.types[kind];
    const sel = restSelection(t, names, variant, opts.maxCachedBytes);
    if (pollAnswer(sub, version, sel.version) === 'send') return sendSelection(reply, status, sub, t, sel);
    maybeAcked(status, state, t);
    if (holdMs === 0 || held.size >= opts.maxHeld) return void reply.code(304).send();
    // Unchanged: hold until a change releases it, or answer 304 before the proxy's request_timeout.
    // The parsed body is not needed any more (the node's identity and names are kept).
    req.body = undefined;
    const h: Held = { node, status, kind, names, variant, version, sub, reply };
    h.timer = setTimeout(answer, holdMs, h);
    held.set(reply.raw, h);
    reply.raw.once('close', onHeldClose);
  });

  return {
    app,
    setTls(next) {
      if (!tls) throw new Error('this REST server does not serve TLS');
      (app.server as HttpsServer).setSecureContext(next);
    },
    heldCount: () => held.size,
    releaseAll: () => {
      for (const h of [...held.values()]) answer(h);
    },
  };
}
