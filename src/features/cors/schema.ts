/** CORS in the YAML model: a virtual host's or route's policy (a route's `false` turns it off). */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, strict } from '../kit/schema-primitives.ts';

const OriginMatch = Type.Object(
  {
    exact: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    regex: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'RE2, whole origin.' })),
  },
  strict,
);

const HeaderNames = Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1, uniqueItems: true });

export const Cors = Type.Object(
  {
    origins: Type.Array(OriginMatch, { minItems: 1, maxItems: 64, description: 'Origins allowed: one match each.' }),
    methods: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Z]+$', maxLength: 16 }), { minItems: 1, uniqueItems: true }),
    ),
    allowHeaders: Type.Optional(HeaderNames),
    exposeHeaders: Type.Optional(HeaderNames),
    maxAge: Type.Optional(Duration),
    credentials: Type.Optional(Type.Boolean({ description: 'Access-Control-Allow-Credentials.' })),
  },
  { ...strict, description: 'Cross-origin requests from browsers: preflights answered by the proxy.' },
);

export type CorsDoc = Static<typeof Cors>;

export const corsFields = {
  virtualHost: { cors: Type.Optional(Cors) },
  route: { cors: Type.Optional(Type.Union([Cors, Type.Literal(false)])) },
} as const;

/** What the feature reads of a virtual host and of a route. */
export interface CorsVirtualHost {
  readonly cors?: CorsDoc;
  readonly routes: readonly CorsRoute[];
}
export interface CorsRoute {
  readonly cors?: CorsDoc | false;
}
