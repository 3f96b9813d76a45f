/** Cross-origin requests from browsers, answered at the proxy (Envoy's CORS filter). */
import { defineFeature } from '../kit/feature.ts';
import { checkCors } from './checks.ts';
import { corsFields, type CorsRoute, type CorsVirtualHost } from './schema.ts';
import { corsFilters, corsPerFilterConfig } from './translate.ts';

export const cors = defineFeature<unknown, CorsVirtualHost, CorsRoute, unknown, typeof corsFields>({
  name: 'cors',
  docs: 'configuration.md#cors',
  fields: corsFields,
  grpc: {
    kind: 'envoy-only',
    why: "an HTTP filter of Envoy's listeners; browsers do not speak gRPC to a proxyless client",
  },
  checks: {
    virtualHost: (v, c) => checkCors(v.cors, ['cors'], c),
    route: (r, path, c) => checkCors(r.cors, [...path, 'cors'], c),
  },
  http: {
    phase: 'preflight',
    filters: (_l, vhosts) => corsFilters(vhosts),
    perFilterConfig: (o) => corsPerFilterConfig(o),
  },
});
