/** Request mirroring: copies of a route's requests to other services, their answers dropped. */
import { Codes } from '../../shared/diagnostics.ts';
import { compact, perMillion } from '../kit/envoy-json.ts';
import { defineFeature } from '../kit/feature.ts';
import { mirrorFields, type MirrorRoute } from './schema.ts';

export const mirror = defineFeature<unknown, unknown, MirrorRoute, unknown, typeof mirrorFields>({
  name: 'mirror',
  docs: 'configuration.md#request-mirroring',
  fields: mirrorFields,
  grpc: { kind: 'envoy-only', why: "gRPC's xDS clients do not mirror RPCs (no gRFC for request_mirror_policies)" },
  checks: {
    route: (route, path, c) => {
      route.mirror?.forEach((m, i) => {
        c.service([...path, 'mirror', i, 'to'], m.to);
        if (route.to === m.to)
          c.warn(Codes.INVALID_VALUE, [...path, 'mirror', i, 'to'], `"${m.to}" gets the request already`);
      });
      if (route.mirror && route.to === undefined && route.split === undefined)
        c.error(Codes.INVALID_VALUE, [...path, 'mirror'], 'mirroring copies requests a route forwards (to or split)');
    },
  },
  // Envoy's request mirror policies on the route's action.
  routeAction: (r) =>
    r.mirror && {
      request_mirror_policies: r.mirror.map((t) =>
        compact({
          cluster: t.to,
          runtime_fraction:
            t.percent === undefined || t.percent === 100 ? undefined : { default_value: perMillion(t.percent) },
        }),
      ),
    },
});
