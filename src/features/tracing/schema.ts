/** Tracing in the YAML model: a listener's spans to a Zipkin or OpenTelemetry collector. */
import { Type, type Static } from '@sinclair/typebox';
import { Name, strict } from '../kit/schema-primitives.ts';

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

export type TracingDoc = Static<typeof Tracing>;

export const tracingFields = { listener: { tracing: Type.Optional(Tracing) } } as const;

export interface TracingListener {
  readonly tracing?: TracingDoc;
  readonly virtualHosts?: readonly string[];
}
