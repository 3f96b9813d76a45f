/** The proxies: this replica's and its peers' nodes, one node's streams and NACKs, why it is served what it is. */
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { explainNode, gatherFacts } from '../explain.ts';
import { ExplainQuery, LimitQuery, NodeParams, NodesQuery } from '../route-schemas.ts';
import { clampLimit, fleetNodes, type AdminDeps } from '../views.ts';

export const nodeRoutes: FastifyPluginAsync<AdminDeps> = async (app, deps) => {
  // Paged: a fleet of thousands must not become one huge response. `limit` per list (default 1000).
  app.get<{ Querystring: Static<typeof NodesQuery> }>(
    '/api/v1/nodes',
    { schema: { querystring: NodesQuery } },
    async (req) => {
      const limit = clampLimit(req.query.limit ?? '1000', 5000);
      const offset = Math.max(0, Number.parseInt(req.query.offset ?? '0', 10) || 0);
      const page = <T>(all: T[]) => all.slice(offset, offset + limit);
      const replica = deps.replica?.name;
      // Peers' proxies too, unless a peer is asking (local=1) or there are none.
      const { mine, peers } = await fleetNodes(deps, { local: Boolean(req.query.local) });
      const all = [...mine, ...peers.flatMap((p) => p.nodes)];
      const [connected, polling, gone] = [
        all.filter((n) => n.transport !== 'rest'),
        all.filter((n) => n.transport === 'rest'),
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
    },
  );
  app.get<{ Params: Static<typeof NodeParams> }>(
    '/api/v1/nodes/:id',
    { schema: { params: NodeParams } },
    async (req) => {
      const streams = deps.registry.byNodeId(req.params.id);
      const nacks = deps.control.nacks(req.params.id, 50);
      if (!streams.length && !nacks.length)
        throw new FleetError(ErrorCodes.UNKNOWN_NODE, `node "${req.params.id}" is unknown`);
      return { id: req.params.id, streams, nacks };
    },
  );
  // What the node is served and why, per type (admin/explain.ts).
  app.get<{ Params: Static<typeof NodeParams>; Querystring: Static<typeof ExplainQuery> }>(
    '/api/v1/nodes/:id/explain',
    { schema: { params: NodeParams, querystring: ExplainQuery } },
    async (req) => {
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
        req.query.type,
      );
      if (!facts)
        throw new FleetError(ErrorCodes.UNKNOWN_NODE, `node "${req.params.id}" is not connected to this replica`);
      return explainNode(facts);
    },
  );
  app.get<{ Querystring: Static<typeof LimitQuery> }>(
    '/api/v1/nacks',
    { schema: { querystring: LimitQuery } },
    async (req) => ({ nacks: deps.control.nacks(undefined, clampLimit(req.query.limit)) }),
  );
};
