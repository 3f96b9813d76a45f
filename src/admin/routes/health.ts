/** Health checks, the status page and its script, metrics, and who the caller is. */
import type { FastifyPluginAsync } from 'fastify';
import { nothingServedReason } from '../../shared/diagnostics.ts';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { PAGE_SCRIPT, pageScript } from '../page-assets.ts';
import { STATUS_PAGE } from '../status-page.ts';
import type { AdminDeps } from '../views.ts';

export const healthRoutes: FastifyPluginAsync<AdminDeps> = async (app, deps) => {
  app.get('/healthz', async () => ({ ok: true }));
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
  app.get('/metrics', async (_req, reply) => {
    if (!deps.metrics) throw new FleetError(ErrorCodes.NOT_FOUND, 'metrics disabled');
    return reply.type('text/plain; version=0.0.4').send(await deps.metrics.text());
  });
  // Who the caller is, so the page offers the decisions only to an admin token.
  app.get('/api/v1/whoami', async (req) => {
    const { actor, role } = req as unknown as { actor?: string; role?: string };
    return deps.tokens?.enabled ? { name: actor, role } : { name: null, role: 'admin', tokens: false };
  });
};
