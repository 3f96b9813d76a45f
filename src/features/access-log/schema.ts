/** Access logs in the YAML model: where a listener logs each request (HTTP) or connection (TCP). */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Name, strict } from '../kit/schema-primitives.ts';

/** Where a listener logs each request (HTTP) or connection (TCP), and which. */
export const AccessLog = Type.Object(
  {
    to: Type.Union(
      [
        Type.String({ minLength: 1 }),
        Type.Object(
          {
            service: Name,
            logName: Type.Optional(
              Type.String({ minLength: 1, maxLength: 256, description: 'Default: the listener.' }),
            ),
          },
          strict,
        ),
      ],
      {
        description:
          "stdout, stderr, an absolute file path on the proxy host, or { service }: Envoy's gRPC access log " +
          'service (every field, structured).',
      },
    ),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('text')], {
        description: 'json (default): one object per line; text: `text` with Envoy format operators.',
      }),
    ),
    fields: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.String({ minLength: 1 }), {
        description: 'json: the fields, name -> Envoy format operator (default: a set to debug with).',
      }),
    ),
    text: Type.Optional(
      Type.String({ minLength: 1, description: 'text: the line, e.g. "%START_TIME% %RESPONSE_CODE%".' }),
    ),
    filter: Type.Optional(
      Type.Object(
        {
          status: Type.Optional(
            Type.Object(
              {
                min: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
                max: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
              },
              strict,
            ),
          ),
          minDuration: Type.Optional(Duration),
          notHealthCheck: Type.Optional(Type.Boolean()),
          samplePercent: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 100 })),
        },
        { ...strict, description: 'Log only these (all must hold).' },
      ),
    ),
  },
  strict,
);

export type AccessLogDoc = Static<typeof AccessLog>;

export const accessLogFields = {
  listener: { accessLog: Type.Optional(Type.Array(AccessLog, { minItems: 1, maxItems: 4 })) },
} as const;

export interface AccessLogListener {
  readonly name: string;
  readonly accessLog?: readonly AccessLogDoc[];
  /** A TCP listener logs connections. */
  readonly tcp?: unknown;
}
