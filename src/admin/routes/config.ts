/** The served config: its versions' resources per group, the node groups, the secrets by fingerprint. */
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { RESOURCE_KINDS, TypeUrls } from '../../xds/resource-types.ts';
import { GroupResourcesParams } from '../route-schemas.ts';
import { redactedSecret, type AdminDeps } from '../views.ts';

export const configRoutes: FastifyPluginAsync<AdminDeps> = async (app, deps) => {
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

  app.get<{ Params: Static<typeof GroupResourcesParams> }>(
    '/api/v1/groups/:group/resources/:kind',
    { schema: { params: GroupResourcesParams } },
    async (req) => {
      const g = deps.cache.current?.groups.get(req.params.group);
      if (!g) throw new FleetError(ErrorCodes.UNKNOWN_GROUP, `no node group "${req.params.group}"`);
      const t = g.types[req.params.kind];
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
    },
  );

  app.get('/api/v1/secrets', async () => ({ secrets: deps.control.secrets() }));
};
