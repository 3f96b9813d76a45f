/**
 * REST-JSON polling (envoy-xds-server-rules §3): `POST /v3/discovery:<type>` with a JSON
 * DiscoveryRequest, answered with a JSON DiscoveryResponse.
 *  - no `version_info` (first poll): always 200 with the full state for the node;
 *  - `version_info` equal to the current version: held until something changes (then 200), or
 *    until `holdMs` (kept below Envoy's request_timeout), then 304;
 *  - clusters/listeners: full state; endpoints/routes/secrets: exactly the named resources;
 *  - REST has no NACK: a node that keeps reporting an older version after receiving a newer one
 *    rejected it, and that is recorded as an inferred NACK.
 * Response bodies are serialized once per (group, type, selection, version) and shared.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { NodeIdentity } from '../../model/node-groups.ts';
import { readFileSync } from 'node:fs';
import type { TLSSocket } from 'node:tls';
import type { TokenAuth } from '../../security/tokens.ts';
import { checkNodeIdentity } from '../../security/node-identity.ts';
import { shortHash } from '../../shared/hash.ts';
import { retargetConfigSources, type ConfigSourceFor } from '../../snapshot/config-sources.ts';
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import type { PublishedConfig, SnapshotCache } from '../../snapshot/snapshot-cache.ts';
import type { NodeRegistry, StreamStatus } from '../../status/node-registry.ts';
import { encodeJson } from '../../xds/proto-json.ts';
import { DISCOVERY_REQUEST, TypeUrls, supportsWildcard, type ResourceKind } from '../../xds/type-urls.ts';

/** REST paths (google.api.http annotations of the Fetch* methods). */
export const REST_PATHS: Record<string, ResourceKind> = {
  clusters: 'cluster',
  endpoints: 'endpoint',
  listeners: 'listener',
  routes: 'route',
  secrets: 'secret',
};

export interface RestOptions {
  cache: SnapshotCache;
  registry: NodeRegistry;
  log: Logger;
  holdMs: number;
  bodyLimit: number;
  maxHeld: number;
  /** Config source REST clients must use for EDS/RDS/SDS references. */
  configSource: ConfigSourceFor;
  /** Optional bearer tokens (for pollers that can send headers; Envoy cannot: use mTLS). */
  tokens?: TokenAuth;
  /** HTTPS, optionally with client certificates bound to node ids. */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string; identityPrefix?: string };
}

interface Selection {
  version: string;
  /** The JSON response, encoded once: thousands of released polls share these bytes. */
  body: Buffer;
}

interface Held {
  node: NodeIdentity;
  status: StreamStatus;
  kind: ResourceKind;
  names: string[];
  version: string;
  reply: FastifyReply;
  resolve: () => void;
  timer: NodeJS.Timeout;
}

class BadRequest extends Error {}

/** Bodies per type snapshot and selection: computed once per version, shared by every poll. */
const selectionCache = new WeakMap<TypeSnapshot, Map<string, Selection>>();

export function restSelection(t: TypeSnapshot, names: readonly string[], sourceFor: ConfigSourceFor): Selection {
  const full = supportsWildcard(t.kind);
  const key = full ? '*' : [...new Set(names)].sort().join('\u0000');
  let perType = selectionCache.get(t);
  if (!perType) selectionCache.set(t, (perType = new Map()));
  let sel = perType.get(key);
  if (!sel) {
    const picked = full ? [...t.resources.values()] : key.split('\u0000').map((n) => t.resources.get(n)).filter((r) => r !== undefined);
    // Full-state types carry the type version; a named selection gets a version of its own, so a
    // change to some other cluster's endpoints does not wake this poller.
    const version = full ? t.version : shortHash(picked.map((r) => `${r.name}\u0000${r.version}`).join('\n'));
    const resources = picked.map((r) => ({ '@type': TypeUrls[t.kind], ...retargetConfigSources(r.json, sourceFor) }));
    sel = { version, body: Buffer.from(JSON.stringify({ version_info: version, resources, type_url: TypeUrls[t.kind] })) };
    if (perType.size > 10_000) perType.clear();
    perType.set(key, sel);
  }
  return sel;
}

function parseRequest(body: unknown, kind: ResourceKind): { node: NodeIdentity & { userAgent: string }; names: string[]; version: string } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new BadRequest('the body must be a JSON DiscoveryRequest object');
  const { issues } = encodeJson(DISCOVERY_REQUEST, body);
  if (issues.length) throw new BadRequest('invalid DiscoveryRequest: ' + issues.slice(0, 5).map((i) => `${i.path || '(root)'}: ${i.message}`).join('; '));
  const b = body as Record<string, any>;
  const typeUrl = b.type_url ?? b.typeUrl;
  if (typeUrl && typeUrl !== TypeUrls[kind]) throw new BadRequest(`type_url ${typeUrl} does not match this path (${TypeUrls[kind]})`);
  const node = b.node;
  if (!node?.id) throw new BadRequest('node.id is required');
  return {
    node: {
      id: String(node.id),
      cluster: String(node.cluster ?? ''),
      metadata: (node.metadata ?? {}) as Record<string, unknown>,
      userAgent: [node.user_agent_name ?? node.userAgentName, node.user_agent_version ?? node.userAgentVersion].filter(Boolean).join('/'),
    },
    names: (b.resource_names ?? b.resourceNames ?? []) as string[],
    version: String(b.version_info ?? b.versionInfo ?? ''),
  };
}

export interface RestServer {
  app: FastifyInstance;
  heldCount(): number;
  /** Answers every held poll with 304 (used on shutdown). */
  releaseAll(): void;
}

export function createRestServer(opts: RestOptions): RestServer {
  const tls = opts.tls;
  const app = Fastify({
    ...(tls ? { https: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile), ...(tls.clientCaFile ? { ca: readFileSync(tls.clientCaFile), requestCert: true, rejectUnauthorized: true } : {}) } } : {}),
    loggerInstance: opts.log.child({ component: 'rest' }, { level: 'warn' }) as FastifyBaseLogger,
    bodyLimit: opts.bodyLimit,
    // Envoy sets Host to the cluster name; never route on it.
    requestTimeout: opts.holdMs + 30_000,
    return503OnClosing: true,
  });
  const held = new Set<Held>();
  // Envoy always sends application/json; anything else is refused with 415.
  app.removeContentTypeParser('text/plain');

  const answer = (h: Held, sel?: Selection) => {
    clearTimeout(h.timer);
    held.delete(h);
    if (!h.reply.sent && !h.reply.raw.destroyed) {
      if (!sel) h.reply.code(304).send();
      else {
        opts.registry.sent(h.status, TypeUrls[h.kind], sel.version, '');
        h.reply.code(200).type('application/json').send(sel.body);
      }
    }
    h.resolve();
  };

  const current = (node: NodeIdentity): { group: string; cfg: PublishedConfig } | undefined => {
    const cfg = opts.cache.current;
    if (!cfg) return undefined;
    return { group: cfg.resolver.resolve(node), cfg };
  };

  opts.cache.onPublish((cfg) => {
    // Re-resolve each held node: a model change can also move nodes between groups.
    for (const h of [...held]) {
      const group = cfg.resolver.resolve(h.node);
      const t = cfg.groups.get(group)?.types[h.kind];
      if (!t) continue;
      const sel = restSelection(t, h.names, opts.configSource);
      if (sel.version !== h.version) answer(h, sel);
    }
  });

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const status = err instanceof BadRequest ? 400 : err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
    if (status >= 500) opts.log.error({ err }, 'REST request failed');
    reply.code(status).send({ error: err.message });
  });

  // find-my-way cannot put a parameter right after a literal ':', so take the whole segment.
  app.post<{ Params: { call: string } }>('/v3/:call', async (req, reply) => {
    const m = /^discovery:([a-z_-]+)$/.exec(req.params.call);
    const kind = m ? REST_PATHS[m[1]] : undefined;
    if (!kind) return reply.code(404).send({ error: `no REST discovery at /v3/${req.params.call} (served: ${Object.keys(REST_PATHS).map((t) => `/v3/discovery:${t}`).join(', ')})` });
    if (opts.tokens?.enabled && !opts.tokens.check(req.headers.authorization)) return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'a bearer token is required' });
    const { node, names, version } = parseRequest(req.body, kind);
    if (tls?.identityPrefix) {
      const cert = (req.raw.socket as TLSSocket).getPeerCertificate?.();
      const refusal = checkNodeIdentity(node, cert && Object.keys(cert).length ? cert : undefined, tls.identityPrefix);
      if (refusal) return reply.code(403).send({ error: refusal });
    }
    const at = current(node);
    if (!at) return reply.code(503).send({ error: 'no configuration applied yet' });
    const typeUrl = TypeUrls[kind];
    const status = opts.registry.poller({ nodeId: node.id, nodeCluster: node.cluster, group: at.group, transport: 'rest', peer: req.ip, userAgent: node.userAgent });
    const ts = (status.types[typeUrl] ??= {});
    // What the node applied: its version_info is that of the last response it accepted.
    if (ts.sentVersion && version === ts.sentVersion) {
      if (ts.ackedVersion !== version) opts.registry.acked(status, typeUrl, version);
    } else if (ts.sentVersion && version !== ts.sentVersion && ts.lastNack?.version !== ts.sentVersion && ts.ackedVersion !== ts.sentVersion) {
      opts.registry.nacked(status, typeUrl, ts.sentVersion, '', 0, `inferred: node reports version "${version || '(none)'}" after receiving "${ts.sentVersion}"; REST carries no error detail, see the proxy's log ("REST config for ... rejected")`);
    }
    const t = at.cfg.groups.get(at.group)!.types[kind];
    const sel = restSelection(t, names, opts.configSource);
    if (version === '' || version !== sel.version) {
      opts.registry.sent(status, typeUrl, sel.version, '');
      return reply.code(200).type('application/json').send(sel.body);
    }
    if (held.size >= opts.maxHeld) return reply.code(304).send();
    // Unchanged: hold until a change releases it, or answer 304 before Envoy's request_timeout.
    await new Promise<void>((resolve) => {
      const h: Held = { node, status, kind, names, version, reply, resolve, timer: setTimeout(() => answer(h), opts.holdMs) };
      held.add(h);
      reply.raw.on('close', () => {
        if (held.delete(h)) {
          clearTimeout(h.timer);
          resolve();
        }
      });
    });
    return reply;
  });

  return {
    app,
    heldCount: () => held.size,
    releaseAll: () => {
      for (const h of [...held]) answer(h);
    },
  };
}

