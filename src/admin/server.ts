/**
 * Admin/status HTTP API (fastify). Read-only in this version; bind it to localhost. Token auth,
 * the web page and metrics come with the operations issue.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { fastifyLogger } from '../shared/fastify-logger.ts';
import type { Logger } from 'pino';
import { nothingServedReason } from '../shared/diagnostics.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import type { AdminControl } from './control.ts';
import { explainNode, gatherFacts, servedVersionOf } from './explain.ts';
import { peerNodes, type ReplicaNode, type ReplicaSettings } from './peers.ts';
import {
  fleetSummary,
  NODE_STATES,
  nodePage,
  nodeRow,
  whereNodeIs,
  type NodeRow,
  type NodeState,
} from './fleet-view.ts';
import type { Metrics } from '../status/metrics.ts';
import type { TokenAuth } from '../security/tokens.ts';
import { STATUS_PAGE } from './status-page.ts';
import { PAGE_SCRIPT, pageScript } from './page-assets.ts';
import { groupSnapshotFor, type SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { NodeRegistry, StreamStatus } from '../status/node-registry.ts';
import { listenerView } from '../status/listener-view.ts';
import { RESOURCE_KINDS, TypeUrls, type ResourceKind } from '../xds/resource-types.ts';
import { nestedDeeperThan } from '../shared/json-depth.ts';

export interface AdminDeps {
  control: AdminControl;
  cache: SnapshotCache;
  registry: NodeRegistry;
  log: Logger;
  metrics?: Metrics;
  /** When any token is configured, every call but health checks needs one; mutations need role admin. */
  tokens?: TokenAuth;
  /** Number of REST polls being held, when REST is enabled. */
  restHeld?: () => number;
  /** This replica's name and its peers (one fleet view across replicas). */
  replica?: ReplicaSettings;
  /** Node groups whose rendered files could not be written (files transport). */
  fileFailures?: () => { group: string; error: string; versionId: number; at: string }[];
  /** While the config tree cannot be read completely (app/read-retry.ts). */
  unreadableTree?: () => { since: string; reason: string; failedReads: number; nextReadAt: string } | undefined;
  /** /readyz answers 503 while this replica cannot know whether it missed shared decisions. */
  notReadyWhileUnknown?: boolean;
  /** grpc.serveLastAckedOnNack: what explains a node served its group's last accepted version. */
  serveLastAckedOnNack?: boolean;
  /** The certificates fleetxds's own TLS listeners serve now. */
  listenerCertificates?: () => { listener: string; subject: string; fingerprint: string; notAfter: Date }[];
}

/** A config version id as text: digits only, short enough to stay a safe integer. */
const VERSION_ID = /^[0-9]{1,15}$/;

/** Decision bodies are flat; anything deeper is refused before a route reads it. */
const MAX_BODY_DEPTH = 8;
const MAX_ACTOR_LENGTH = 200;

/** The fields of an operator decision's body, each of its one accepted type, else a 400. */
function decisionBody(body: unknown): { versionId?: number; actor?: string } {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw new FleetError(ErrorCodes.BAD_REQUEST, 'the body must be a JSON object');
  const { versionId, actor } = body as { versionId?: unknown; actor?: unknown };
  const out: { versionId?: number; actor?: string } = {};
  if (versionId !== undefined) {
    const id = typeof versionId === 'string' && VERSION_ID.test(versionId) ? Number(versionId) : versionId;
    if (typeof id !== 'number' || !Number.isSafeInteger(id))
      throw new FleetError(ErrorCodes.BAD_REQUEST, 'versionId must be a whole number');
    out.versionId = id;
  }
  if (actor !== undefined) {
    if (typeof actor !== 'string' || actor.length > MAX_ACTOR_LENGTH)
      throw new FleetError(ErrorCodes.BAD_REQUEST, `actor must be a string of at most ${MAX_ACTOR_LENGTH} characters`);
    out.actor = actor;
  }
  return out;
}

/** What needs no token: health checks, and the page and its script (they hold no data). */
const PUBLIC = new Set(['/healthz', '/readyz', '/', `/assets/${PAGE_SCRIPT}`]);

export function createAdminServer(deps: AdminDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: fastifyLogger(deps.log.child({ component: 'admin' }, { level: 'warn' })),
    bodyLimit: 64 * 1024,
    requestTimeout: 30_000,
  });

  // Refusals of operator decisions carry a stable code and their HTTP status (404 for an unknown version...).
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof FleetError) {
      if (err.code === ErrorCodes.UNAUTHENTICATED) void reply.header('www-authenticate', 'Bearer');
      return reply.code(err.httpStatus).send({ error: err.message, code: err.code });
    }
    return reply.send(err);
  });
  // Before any route reads a body: conversions of nested values recurse.
  app.addHook('preValidation', async (req) => {
    if (nestedDeeperThan(req.body, MAX_BODY_DEPTH))
      throw new FleetError(ErrorCodes.BAD_REQUEST, `the body is nested deeper than ${MAX_BODY_DEPTH} levels`);
  });
  app.addHook('onRequest', async (req) => {
    // The page itself holds no data; everything it shows comes from the API, which needs a token.
    if (!deps.tokens?.enabled || PUBLIC.has(req.url)) return;
    const who = deps.tokens.check(req.headers.authorization);
    if (!who) throw new FleetError(ErrorCodes.UNAUTHENTICATED, 'a bearer token is required');
    if (req.method !== 'GET' && req.method !== 'HEAD' && who.role !== 'admin')
      throw new FleetError(ErrorCodes.FORBIDDEN, `token "${who.name}" is read-only`);
    Object.assign(req, { actor: who.name, role: who.role });
  });
  const actorOf = (req: unknown, fallback: string) => (req as { actor?: string }).actor ?? fallback;
  // Who the caller is, so the page offers the decisions only to an admin token.
  app.get('/api/v1/whoami', async (req) => {
    const { actor, role } = req as unknown as { actor?: string; role?: string };
    return deps.tokens?.enabled ? { name: actor, role } : { name: null, role: 'admin', tokens: false };
  });
  // The fleet at a glance and the node list, filtered and paged here (admin/fleet-view.ts).
  app.get('/api/v1/fleet', async () => {
    const cur = deps.cache.current;
    const rows = await fleetRows(deps);
    const rollouts = deps.control.rollout();
    const rollout = rollouts.rollout;
    const rejection = deps.control.currentRejection();
    const unreadableTree = deps.unreadableTree?.();
    return {
      ...fleetSummary(
        cur && {
          versionId: cur.versionId,
          appliedAt: cur.appliedAt,
          groups: cur.groups.keys(),
          ...(cur.staged && {
            staged: {
              from: cur.staged.fromVersionId,
              to: cur.staged.versionId,
              groups: new Set(cur.staged.groups.keys()),
            },
          }),
        },
        rows,
        {
          ...(rejection && {
            rejection: {
              rejectedAt: rejection.rejectedAt,
              source: rejection.source,
              diagnostics: rejection.diagnostics,
            },
          }),
          ...(rollout && {
            rollout: { id: rollout.id, status: rollout.status, stage: rollout.stage, halt: rollout.halt },
          }),
          ...(unreadableTree && { unreadableTree }),
          fileFailures: deps.fileFailures?.() ?? [],
          certificates: (deps.listenerCertificates?.() ?? []).map((c) => ({
            listener: c.listener,
            subject: c.subject,
            notAfter: c.notAfter.toISOString(),
          })),
          replicasBehind: deps.control.sharedDecisions()?.behind,
          now: Date.now(),
        },
      ),
      rollout: rollouts,
      pins: deps.control.pins(),
    };
  });
  app.get<{ Querystring: Record<string, string | undefined> }>('/api/v1/fleet/nodes', async (req) => {
    const q = req.query;
    const state = q.state;
    if (state !== undefined && !(NODE_STATES as readonly string[]).includes(state))
      throw new FleetError(ErrorCodes.BAD_REQUEST, `state must be one of ${NODE_STATES.join(', ')}`);
    return nodePage(
      await fleetRows(deps),
      {
        q: q.q,
        group: q.group,
        state: state as NodeState | undefined,
        transport: q.transport,
        client: q.client,
        ...(q.version !== undefined && q.version !== '' && { versionId: versionParam(q.version) }),
      },
      Number(q.offset ?? 0),
      Number(q.limit ?? 50),
    );
  });
  app.get('/api/v1/served', async () => servedView(deps));
  app.get('/api/v1/fleet/health', async () => {
    if (!deps.metrics) throw new FleetError(ErrorCodes.NOT_FOUND, 'metrics disabled');
    return { minutes: deps.metrics.health.series() };
  });
  app.get('/healthz', async () => ({ ok: true }));
  app.get('/', async (_req, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'self'; style-src 'unsafe-inline'")
      .send(STATUS_PAGE),
  );
  app.get(`/assets/${PAGE_SCRIPT}`, async (_req, reply) =>
    reply
      .type('text/javascript; charset=utf-8')
      .header('cache-control', 'no-cache')
      .send(await pageScript()),
  );
  app.get('/api/v1/status', async () => {
    const status = fleetStatus(deps);
    const peers = await peerNodes(deps.replica);
    if (!peers.length) return status;
    // Every proxy of the fleet, whichever replica serves it.
    const more = peers.flatMap((p) => p.nodes.map((n) => nodeView(n)));
    return {
      ...status,
      nodes: [...status.nodes, ...more],
      replicas: [
        { replica: deps.replica?.name, nodes: status.nodes.length, self: true },
        ...peers.map((p) => ({ replica: p.replica, url: p.url, nodes: p.nodes.length, error: p.error })),
      ],
    };
  });
  app.get('/metrics', async (_req, reply) => {
    if (!deps.metrics) throw new FleetError(ErrorCodes.NOT_FOUND, 'metrics disabled');
    return reply.type('text/plain; version=0.0.4').send(await deps.metrics.text());
  });
  app.get('/readyz', async (_req, reply) => {
    const cur = deps.cache.current;
    if (!cur)
      return reply.code(503).send({
        ready: false,
        reason: nothingServedReason({
          rejection: deps.control.currentRejection(),
          unreadableTree: deps.unreadableTree?.(),
        }),
      });
    const shared = deps.control.sharedDecisions();
    if (deps.notReadyWhileUnknown && shared && shared.behind === null)
      return reply.code(503).send({
        ready: false,
        reason:
          'cannot know whether operator decisions were missed: the shared decision store ' +
          (shared.connected ? 'is not read to its end yet' : `is unreachable (${shared.lastError ?? 'not connected'})`),
        versionId: cur.versionId,
      });
    return { ready: true, versionId: cur.versionId };
  });

  app.get('/api/v1/config', async () => {
    const cur = deps.cache.current;
    if (!cur) throw new FleetError(ErrorCodes.NOT_FOUND, 'no config version applied yet');
    const groups = Object.fromEntries(
      [...cur.groups].map(([name, g]) => [
        name,
        Object.fromEntries(
          RESOURCE_KINDS.map((k) => [
            k,
            {
              typeUrl: TypeUrls[k],
              version: g.types[k].version,
              resources: [...g.types[k].resources.values()].map((r) => ({ name: r.name, version: r.version })),
            },
          ]),
        ),
      ]),
    );
    return {
      versionId: cur.versionId,
      modelHash: cur.modelHash,
      treeHash: cur.treeHash,
      appliedAt: cur.appliedAt,
      groups,
    };
  });

  // The node groups of the served version, as written: what `fleetxds bootstrap` judges a node's group by.
  app.get('/api/v1/node-groups', async () => {
    const cur = deps.cache.current;
    if (!cur) throw new FleetError(ErrorCodes.NOT_READY, 'no config version applied yet');
    return { versionId: cur.versionId, nodeGroups: cur.resolver.nodeGroups };
  });

  app.get<{ Params: { group: string; kind: string } }>('/api/v1/groups/:group/resources/:kind', async (req) => {
    const cur = deps.cache.current;
    const g = cur?.groups.get(req.params.group);
    if (!g) throw new FleetError(ErrorCodes.UNKNOWN_GROUP, `no node group "${req.params.group}"`);
    if (!(RESOURCE_KINDS as readonly string[]).includes(req.params.kind))
      throw new FleetError(ErrorCodes.NOT_FOUND, `kind must be one of ${RESOURCE_KINDS.join(', ')}`);
    const t = g.types[req.params.kind as ResourceKind];
    // Secrets carry private keys: status shows who has which secret, by fingerprint, never the bytes.
    const shown =
      t.kind === 'secret'
        ? (r: { name: string; version: string }) => redactedSecret(r.name, r.version, deps.control.secrets())
        : (r: { json: object }) => r.json;
    return {
      typeUrl: TypeUrls[t.kind],
      version: t.version,
      resources: [...t.resources.values()].map((r) => shown(r as never)),
    };
  });

  app.get<{ Querystring: { limit?: string } }>('/api/v1/versions', async (req) => {
    const limit = clampLimit(req.query.limit);
    // One row more than shown: the predecessor of the oldest shown version, for its changes.
    const rows = deps.control.versions(limit + 1);
    return {
      current: deps.cache.current?.versionId,
      pins: deps.control.pins(),
      versions: rows.slice(0, limit).map((v, i) => {
        const prev = rows[i + 1]?.id;
        const changes = prev !== undefined ? deps.control.diff(prev, v.id) : undefined;
        return { ...v, changes };
      }),
    };
  });
  app.get<{ Params: { a: string; b: string } }>('/api/v1/versions/:a/diff/:b', async (req) => {
    const d = deps.control.diff(Number(req.params.a), Number(req.params.b));
    if (!d) throw new FleetError(ErrorCodes.UNKNOWN_VERSION, 'unknown version (or one without stored resources)');
    return d;
  });
  // One Envoy resource in two versions, as served to a group: what the history's diff shows.
  app.get<{ Params: { a: string; b: string; group: string; kind: string; name: string } }>(
    '/api/v1/versions/:a/diff/:b/resources/:group/:kind/:name',
    async (req) => {
      const { a, b, group, kind, name } = req.params;
      if (!(RESOURCE_KINDS as readonly string[]).includes(kind) || kind === 'secret')
        throw new FleetError(
          ErrorCodes.BAD_REQUEST,
          `kind must be one of ${RESOURCE_KINDS.filter((k) => k !== 'secret').join(', ')} (secrets are never shown)`,
        );
      const at = (v: string) => {
        if (!deps.control.resourceAt || !VERSION_ID.test(v))
          throw new FleetError(ErrorCodes.UNKNOWN_VERSION, `unknown version ${v}`);
        return deps.control.resourceAt(Number(v), group, kind as ResourceKind, name) ?? null;
      };
      return { group, kind, name, before: at(a), after: at(b) };
    },
  );
  app.post('/api/v1/rollback', async (req) => {
    const body = decisionBody(req.body);
    if (body.versionId === undefined || body.versionId < 1)
      throw new FleetError(ErrorCodes.BAD_REQUEST, 'body must be {"versionId": <id>}');
    return deps.control.rollback(body.versionId, actorOf(req, body.actor ?? `admin@${req.ip}`));
  });
  app.get('/api/v1/pins', async () => ({ pins: deps.control.pins() }));
  app.put<{ Params: { group: string } }>('/api/v1/pins/:group', async (req) => {
    const body = decisionBody(req.body);
    if (body.versionId === undefined) throw new FleetError(ErrorCodes.UNKNOWN_VERSION, 'unknown version');
    const actor = actorOf(req, body.actor ?? `admin@${req.ip}`);
    const result = await deps.control.pin(req.params.group, body.versionId, actor);
    return { pinned: req.params.group, versionId: body.versionId, result };
  });
  app.delete<{ Params: { group: string } }>('/api/v1/pins/:group', async (req) => {
    const result = await deps.control.unpin(req.params.group, actorOf(req, `admin@${req.ip}`));
    return { unpinned: req.params.group, result };
  });
  app.get('/api/v1/rollout', async () => deps.control.rollout());
  app.post<{ Params: { command: string } }>('/api/v1/rollout/:command', async (req) => {
    const command = req.params.command;
    if (command !== 'promote' && command !== 'halt' && command !== 'resume' && command !== 'abort')
      throw new FleetError(ErrorCodes.NOT_FOUND, 'command must be promote, halt, resume or abort');
    const actor = actorOf(req, decisionBody(req.body).actor ?? `admin@${req.ip}`);
    return { rollout: await deps.control.rolloutCommand(command, actor) };
  });
  app.get('/api/v1/audit', async () => ({ audit: deps.control.audit() }));
  app.get('/api/v1/rejections/latest', async () => {
    const r = deps.control.latestRejection();
    if (!r) throw new FleetError(ErrorCodes.NOT_FOUND, 'no rejected tree');
    return { ...r, current: deps.control.currentRejection()?.id === r.id };
  });

  app.get('/api/v1/secrets', async () => ({ secrets: deps.control.secrets() }));
  app.get('/api/v1/transports', async () => ({
    grpc: { streams: deps.registry.connected().length },
    rest: deps.restHeld ? { heldPolls: deps.restHeld(), pollingNodes: deps.registry.polling().length } : null,
  }));
  // Paged: a fleet of thousands must not become one huge response. `limit` per list (default 1000).
  app.get<{ Querystring: { limit?: string; offset?: string; local?: string } }>('/api/v1/nodes', async (req) => {
    const limit = clampLimit(req.query.limit ?? '1000', 5000);
    const offset = Math.max(0, Number.parseInt(req.query.offset ?? '0', 10) || 0);
    const page = <T>(all: T[]) => all.slice(offset, offset + limit);
    const replica = deps.replica?.name;
    const mine = (list: StreamStatus[]) => (replica ? list.map((s) => ({ ...s, replica })) : list);
    // Peers' proxies too, unless a peer is asking (local=1) or there are none.
    const peers = req.query.local ? [] : await peerNodes(deps.replica);
    const theirs = peers.flatMap((p) => p.nodes);
    const [connected, polling, gone] = [
      [...mine(deps.registry.connected()), ...theirs.filter((n) => n.transport !== 'rest')],
      [...mine(deps.registry.polling()), ...theirs.filter((n) => n.transport === 'rest')],
      deps.registry.recentlyDisconnected(),
    ];
    return {
      ...(replica ? { replica } : {}),
      ...(peers.length ? { peers: peers.map(({ url, replica: r, error }) => ({ url, replica: r, error })) } : {}),
      connected: page(connected),
      polling: page(polling),
      recentlyDisconnected: page(gone),
      total: { connected: connected.length, polling: polling.length, recentlyDisconnected: gone.length },
      offset,
      limit,
    };
  });
  app.get<{ Params: { id: string } }>('/api/v1/nodes/:id', async (req) => {
    const streams = deps.registry.byNodeId(req.params.id);
    const nacks = deps.control.nacks(req.params.id, 50);
    if (!streams.length && !nacks.length)
      throw new FleetError(ErrorCodes.UNKNOWN_NODE, `node "${req.params.id}" is unknown`);
    return { id: req.params.id, streams, nacks };
  });
  // What the node is served and why, per type (admin/explain.ts).
  app.get<{ Params: { id: string }; Querystring: { type?: string } }>('/api/v1/nodes/:id/explain', async (req) => {
    const only = req.query.type;
    if (only !== undefined && !(RESOURCE_KINDS as readonly string[]).includes(only))
      throw new FleetError(ErrorCodes.BAD_REQUEST, `type must be one of ${RESOURCE_KINDS.join(', ')}`);
    const cfg = deps.cache.current;
    if (!cfg) throw new FleetError(ErrorCodes.NOT_READY, 'no config version applied yet');
    const facts = gatherFacts(
      req.params.id,
      {
        cfg,
        streams: deps.registry.byNodeId(req.params.id),
        pins: deps.control.pins(),
        newestGroup: (group) => deps.control.newestGroup?.(group),
        recentNacks: () => deps.control.nacks(undefined, 1000),
        serveLastAckedOnNack: deps.serveLastAckedOnNack ?? false,
        rolloutId: () => deps.control.rollout().rollout?.id,
      },
      only as ResourceKind | undefined,
    );
    if (!facts)
      throw new FleetError(ErrorCodes.UNKNOWN_NODE, `node "${req.params.id}" is not connected to this replica`);
    return explainNode(facts);
  });
  app.get<{ Querystring: { limit?: string } }>('/api/v1/nacks', async (req) => ({
    nacks: deps.control.nacks(undefined, clampLimit(req.query.limit)),
  }));
  return app;
}

/** A config version id from a query, else a 400. */
function versionParam(v: string): number {
  if (!VERSION_ID.test(v)) throw new FleetError(ErrorCodes.BAD_REQUEST, 'version must be a version id');
  return Number(v);
}

/** Every proxy of the fleet (this replica's and its peers'), each with its state. */
async function fleetRows(deps: AdminDeps): Promise<NodeRow[]> {
  const cur = deps.cache.current;
  const replica = deps.replica?.name;
  const local: ReplicaNode[] = [...deps.registry.connected(), ...deps.registry.polling()].map((s) =>
    replica ? { ...s, replica } : s,
  );
  const peers = (await peerNodes(deps.replica)).flatMap((p) => p.nodes);
  const pins = new Map(deps.control.pins().map((p) => [p.group, p]));
  return [...local, ...peers].map((s) => {
    const served =
      cur && groupSnapshotFor(cur, { id: s.nodeId, cluster: s.nodeCluster, metadata: {} }, s.group).snapshot;
    return nodeRow({
      status: s,
      served,
      ...(cur && { versionId: servedVersionOf(cur, pins.get(s.group), s.group, served) }),
    });
  });
}

/** A node as the status page lists it (its newest NACK first). */
function nodeView(s: ReplicaNode): object {
  const nacks = Object.entries(s.types)
    .filter(([, t]) => t.lastNack)
    .map(([typeUrl, t]) => ({ typeUrl, ...t.lastNack! }));
  nacks.sort((a, b) => (a.at < b.at ? 1 : -1));
  return {
    ...whereNodeIs(s),
    peer: s.peer,
    userAgent: s.userAgent,
    ...(s.clientCertificate ? { clientCertificate: s.clientCertificate } : {}),
    connectedAt: s.connectedAt,
    lastSeenAt: s.lastSeenAt,
    types: s.types,
    lastNack: nacks[0],
  };
}

export function fleetStatus(deps: AdminDeps): { nodes: object[] } & Record<string, unknown> {
  const cur = deps.cache.current;
  const streams = [...deps.registry.connected(), ...deps.registry.polling()];
  const rollout: object[] = [];
  if (cur) {
    // What each node is served (during a staged rollout, its stage's version): resolved once per node.
    const served = new Map(
      streams.map((s) => [
        s,
        groupSnapshotFor(cur, { id: s.nodeId, cluster: s.nodeCluster, metadata: {} }, s.group).snapshot,
      ]),
    );
    for (const [group, g] of cur.groups) {
      for (const kind of RESOURCE_KINDS) {
        const typeUrl = TypeUrls[kind];
        const t = g.types[kind];
        const nodes = streams.filter((s) => s.group === group && s.types[typeUrl]);
        if (!nodes.length) continue;
        const want = (s: (typeof nodes)[number]) => served.get(s)?.types[kind].version ?? t.version;
        const acked = nodes.filter((s) => s.types[typeUrl]?.ackedVersion === want(s)).length;
        const nacked = nodes.filter((s) => s.types[typeUrl]?.lastNack?.version === want(s)).length;
        const staged = cur.staged?.groups.get(group)?.types[kind].version;
        rollout.push({
          group,
          typeUrl,
          version: t.version,
          ...(staged && staged !== t.version ? { stagedVersion: staged } : {}),
          nodes: nodes.length,
          acked,
          nacked,
          behind: nodes.length - acked,
        });
      }
    }
  }
  const nodes = streams.map((s) => nodeView({ ...s, ...(deps.replica ? { replica: deps.replica.name } : {}) }));
  const history = deps.control.versions(20);
  return {
    version: cur
      ? (history.find((h) => h.id === cur.versionId) ?? { id: cur.versionId, appliedAt: cur.appliedAt })
      : null,
    rollout,
    staged: deps.control.rollout(),
    nodes,
    rejection: deps.control.currentRejection() ?? null,
    fileFailures: deps.fileFailures?.() ?? [],
    unreadableTree: deps.unreadableTree?.() ?? null,
    ...servedView(deps),
    sharedDecisions: deps.control.sharedDecisions() ?? null,
    history,
  };
}

/** What the fleet is served beside versions: listeners, runtime registrations, patches, fleetxds's certificates. */
function servedView(deps: AdminDeps) {
  const cur = deps.cache.current;
  return {
    listenerCertificates: (deps.listenerCertificates?.() ?? []).map((c) => ({
      ...c,
      notAfter: c.notAfter.toISOString(),
    })),
    // What each group's proxies listen on, as the served listener resources say.
    listeners: cur
      ? [...cur.groups].flatMap(([group, g]) =>
          [...g.types.listener.resources.values()].map((r) => ({ group, ...listenerView(r.json) })),
        )
      : [],
    patches: deps.control.patches?.() ?? [],
    registrations: deps.control.registrations?.() ?? [],
  };
}

export function redactedSecret(
  name: string,
  version: string,
  served: { name: string; fingerprint: string; notAfter?: string; subject?: string }[] = [],
): object {
  const m = served.find((x) => x.name === name);
  return {
    name,
    version,
    fingerprint: m?.fingerprint,
    notAfter: m?.notAfter,
    subject: m?.subject,
    material: '(redacted)',
  };
}

function clampLimit(v: string | undefined, max = 1000): number {
  const n = Number(v ?? 50);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : 50;
}
