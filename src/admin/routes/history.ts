/** Applied versions and what changed between them, the audit log, the newest refused tree. */
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { DiffParams, LimitQuery, ResourceDiffParams } from '../route-schemas.ts';
import { clampLimit, type AdminDeps } from '../views.ts';

export const historyRoutes: FastifyPluginAsync<AdminDeps> = async (app, deps) => {
  app.get<{ Querystring: Static<typeof LimitQuery> }>(
    '/api/v1/versions',
    { schema: { querystring: LimitQuery } },
    async (req) => {
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
    },
  );
  app.get<{ Params: Static<typeof DiffParams> }>(
    '/api/v1/versions/:a/diff/:b',
    { schema: { params: DiffParams } },
    async (req) => {
      const d = deps.control.diff(Number(req.params.a), Number(req.params.b));
      if (!d) throw new FleetError(ErrorCodes.UNKNOWN_VERSION, 'unknown version (or one without stored resources)');
      return d;
    },
  );
  // One Envoy resource in two versions, as served to a group: what the history's diff shows.
  app.get<{ Params: Static<typeof ResourceDiffParams> }>(
    '/api/v1/versions/:a/diff/:b/resources/:group/:kind/:name',
    { schema: { params: ResourceDiffParams } },
    async (req) => {
      const { a, b, group, kind, name } = req.params;
      const at = (v: string) => {
        if (!deps.control.resourceAt) throw new FleetError(ErrorCodes.UNKNOWN_VERSION, `unknown version ${v}`);
        return deps.control.resourceAt(Number(v), group, kind, name) ?? null;
      };
      return { group, kind, name, before: at(a), after: at(b) };
    },
  );
  app.get('/api/v1/audit', async () => ({ audit: deps.control.audit() }));
  // What lapses when: the newest applied tree's overrides with their deadlines (times in ISO form).
  app.get('/api/v1/overrides', async () => ({
    overrides: deps.control.overrides().map((w) => ({
      what: w.what,
      started: new Date(w.startedAt).toISOString(),
      deadline: new Date(w.deadline).toISOString(),
      expired: w.expired,
    })),
  }));
  app.get('/api/v1/rejections/latest', async () => {
    const r = deps.control.latestRejection();
    if (!r) throw new FleetError(ErrorCodes.NOT_FOUND, 'no rejected tree');
    return { ...r, current: deps.control.currentRejection()?.id === r.id };
  });
};
