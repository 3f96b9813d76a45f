/** The fleet at a glance: the summary, the node list filtered and paged, health, the status document. */
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { fleetSummary, nodePage } from '../fleet-view.ts';
import { FleetNodesQuery } from '../route-schemas.ts';
import { fleetNodes, fleetRows, fleetStatus, nodeView, servedView, type AdminDeps } from '../views.ts';

export const fleetRoutes: FastifyPluginAsync<AdminDeps> = async (app, deps) => {
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
  app.get<{ Querystring: Static<typeof FleetNodesQuery> }>(
    '/api/v1/fleet/nodes',
    { schema: { querystring: FleetNodesQuery } },
    async (req) => {
      const q = req.query;
      return nodePage(
        await fleetRows(deps),
        {
          q: q.q,
          group: q.group,
          state: q.state,
          transport: q.transport,
          client: q.client,
          ...(q.version !== undefined && q.version !== '' && { versionId: Number(q.version) }),
        },
        Number(q.offset ?? 0),
        Number(q.limit ?? 50),
      );
    },
  );
  app.get('/api/v1/fleet/health', async () => {
    if (!deps.metrics) throw new FleetError(ErrorCodes.NOT_FOUND, 'metrics disabled');
    return { minutes: deps.metrics.health.series() };
  });
  app.get('/api/v1/served', async () => servedView(deps));
  app.get('/api/v1/status', async () => {
    const { mine, peers } = await fleetNodes(deps);
    const status = fleetStatus(deps, mine);
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
  app.get('/api/v1/transports', async () => ({
    grpc: { streams: deps.registry.connected().length },
    rest: deps.restHeld ? { heldPolls: deps.restHeld(), pollingNodes: deps.registry.polling().length } : null,
  }));
};
