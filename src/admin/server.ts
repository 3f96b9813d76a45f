/**
 * The admin API, status page and metrics (fastify): refusals, token checks and body bounds here,
 * the routes in routes/ as plugins, each request part checked against its schema (route-schemas.ts).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { fastifyLogger } from '../shared/fastify-logger.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import { nestedDeeperThan } from '../shared/json-depth.ts';
import { PAGE_SCRIPT } from './page-assets.ts';
import { ADMIN_AJV, schemaRefusal } from './route-schemas.ts';
import { configRoutes } from './routes/config.ts';
import { decisionRoutes } from './routes/decisions.ts';
import { fleetRoutes } from './routes/fleet.ts';
import { healthRoutes } from './routes/health.ts';
import { historyRoutes } from './routes/history.ts';
import { nodeRoutes } from './routes/nodes.ts';
import type { AdminDeps } from './views.ts';

export { fleetStatus, redactedSecret, type AdminDeps } from './views.ts';

/** Decision bodies are flat; anything deeper is refused before a route reads it. */
const MAX_BODY_DEPTH = 8;

/** What needs no token: health checks, and the page and its script (they hold no data). */
const PUBLIC = new Set(['/healthz', '/readyz', '/', `/assets/${PAGE_SCRIPT}`]);

export function createAdminServer(deps: AdminDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: fastifyLogger(deps.log.child({ component: 'admin' }, { level: 'warn' })),
    bodyLimit: 64 * 1024,
    requestTimeout: 30_000,
    ajv: ADMIN_AJV,
    schemaErrorFormatter: (errors, part) => schemaRefusal(errors, part),
  });

  // Refusals of operator decisions carry a stable code and their HTTP status (404 for an unknown version...).
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof FleetError) {
      if (err.code === ErrorCodes.UNAUTHENTICATED) void reply.header('www-authenticate', 'Bearer');
      return reply.code(err.httpStatus).send({ error: err.message, code: err.code });
    }
    return reply.send(err);
  });
  // Before any schema or route reads a body: checks of nested values recurse. No body (or null) is `{}`.
  app.addHook('preValidation', async (req) => {
    if (nestedDeeperThan(req.body, MAX_BODY_DEPTH))
      throw new FleetError(ErrorCodes.BAD_REQUEST, `the body is nested deeper than ${MAX_BODY_DEPTH} levels`);
    req.body ??= {};
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
  for (const routes of [healthRoutes, fleetRoutes, nodeRoutes, configRoutes, historyRoutes, decisionRoutes])
    void app.register(routes, deps);
  return app;
}
