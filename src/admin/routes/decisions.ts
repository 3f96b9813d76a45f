/** Operator decisions: apply now, rollback, pins, rollout commands. Each is audited with the caller as its actor. */
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { DecisionBody, GroupParams, RolloutCommandParams } from '../route-schemas.ts';
import type { AdminDeps } from '../views.ts';

/** Who made a decision: the token's name, else the actor the body names, else the caller's address. */
function actorOf(req: FastifyRequest, body?: DecisionBody): string {
  return (req as { actor?: string }).actor ?? body?.actor ?? `admin@${req.ip}`;
}

const versionOf = (body: DecisionBody) => (body.versionId === undefined ? undefined : Number(body.versionId));

export const decisionRoutes: FastifyPluginAsync<AdminDeps> = async (app, deps) => {
  app.post<{ Body: DecisionBody }>('/api/v1/rollback', { schema: { body: DecisionBody } }, async (req) => {
    const versionId = versionOf(req.body);
    if (versionId === undefined || versionId < 1)
      throw new FleetError(ErrorCodes.BAD_REQUEST, 'body must be {"versionId": <id>}');
    return deps.control.rollback(versionId, actorOf(req, req.body));
  });
  // A change known to be complete (a deploy step, configuration management): no debounce.
  app.post<{ Body: DecisionBody }>('/api/v1/apply', { schema: { body: DecisionBody } }, async (req) =>
    deps.control.apply(actorOf(req, req.body)),
  );
  app.get('/api/v1/pins', async () => ({ pins: deps.control.pins() }));
  app.put<{ Params: Static<typeof GroupParams>; Body: DecisionBody }>(
    '/api/v1/pins/:group',
    { schema: { params: GroupParams, body: DecisionBody } },
    async (req) => {
      const versionId = versionOf(req.body);
      if (versionId === undefined) throw new FleetError(ErrorCodes.UNKNOWN_VERSION, 'unknown version');
      const result = await deps.control.pin(req.params.group, versionId, actorOf(req, req.body));
      return { pinned: req.params.group, versionId, result };
    },
  );
  app.delete<{ Params: Static<typeof GroupParams> }>(
    '/api/v1/pins/:group',
    { schema: { params: GroupParams } },
    async (req) => {
      const result = await deps.control.unpin(req.params.group, actorOf(req));
      return { unpinned: req.params.group, result };
    },
  );
  app.get('/api/v1/rollout', async () => deps.control.rollout());
  app.post<{ Params: Static<typeof RolloutCommandParams>; Body: DecisionBody }>(
    '/api/v1/rollout/:command',
    { schema: { params: RolloutCommandParams, body: DecisionBody } },
    async (req) => ({ rollout: await deps.control.rolloutCommand(req.params.command, actorOf(req, req.body)) }),
  );
};
