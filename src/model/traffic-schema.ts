/**
 * HTTP features beyond routing, in the YAML model: request mirroring, CORS, response compression,
 * tracing, regex and DNS host rewrites, and redirects that rewrite.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, Name, strict } from './schema-primitives.ts';

const Percent = Type.Number({ exclusiveMinimum: 0, maximum: 100 });

/** A regex rewrite: matches of `pattern` (RE2) replaced by `substitution` (\1 for a group). */
export const RegexRewrite = Type.Object(
  {
    pattern: Type.String({ minLength: 1, maxLength: 1024, description: 'RE2.' }),
    substitution: Type.String({ maxLength: 1024, description: 'Replaces each match; \\1 .. \\9 for groups.' }),
  },
  strict,
);

export const Mirror = Type.Array(
  Type.Object(
    {
      to: Name,
      percent: Type.Optional({ ...Percent, description: 'Share of requests copied (default 100).' }),
    },
    strict,
  ),
  {
    minItems: 1,
    maxItems: 8,
    description: 'Copies of requests sent to these services too; their answers are dropped.',
  },
);

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

export const Compression = Type.Object(
  {
    algorithms: Type.Array(Enum(['gzip', 'brotli', 'zstd'] as const), {
      minItems: 1,
      uniqueItems: true,
      description: "In order of preference (the client's Accept-Encoding chooses among them).",
    }),
    minLength: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1073741824, description: 'Smaller responses stay as they are (30).' }),
    ),
    contentTypes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        minItems: 1,
        uniqueItems: true,
        description: "Compressed content types (default Envoy's list: text, JSON, JavaScript, XML, SVG, ...).",
      }),
    ),
  },
  { ...strict, description: 'Response compression; a route turns it off with compression: false.' },
);

const Tag = Type.Object(
  {
    header: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    literal: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { ...strict, description: 'One of header (the request header value) and literal.' },
);

export const Tracing = Type.Object(
  {
    zipkin: Type.Optional(
      Type.Object(
        {
          service: Name,
          path: Type.Optional(Type.String({ pattern: '^/', description: 'Default /api/v2/spans.' })),
        },
        { ...strict, description: 'Spans as Zipkin v2 JSON over HTTP to this service.' },
      ),
    ),
    openTelemetry: Type.Optional(
      Type.Object({ service: Name }, { ...strict, description: 'Spans over OTLP/gRPC to this service.' }),
    ),
    serviceName: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'OpenTelemetry: service.name of the spans.' }),
    ),
    samplePercent: Type.Optional(
      Type.Number({ minimum: 0, maximum: 100, description: 'Requests traced (default 100).' }),
    ),
    tags: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Tag, {
        description: 'Tag name -> where it comes from.',
      }),
    ),
  },
  { ...strict, description: 'Tracing: one of zipkin and openTelemetry.' },
);

export type MirrorDoc = Static<typeof Mirror>;
export type CorsDoc = Static<typeof Cors>;
export type CompressionDoc = Static<typeof Compression>;
export type TracingDoc = Static<typeof Tracing>;
export type RegexRewriteDoc = Static<typeof RegexRewrite>;
