/** An HTTP listener's connection-manager settings in the YAML model: timeouts, limits, paths, addresses. */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, strict } from '../kit/schema-primitives.ts';

export const HttpSettings = Type.Object(
  {
    useRemoteAddress: Type.Optional(
      Type.Boolean({ description: "The client's address is the connection's (and is appended to x-forwarded-for)." }),
    ),
    xffNumTrustedHops: Type.Optional(Type.Integer({ minimum: 0, maximum: 16 })),
    idleTimeout: Type.Optional(Duration),
    streamIdleTimeout: Type.Optional(Duration),
    requestHeadersTimeout: Type.Optional(Duration),
    requestTimeout: Type.Optional(Duration),
    maxRequestHeadersKb: Type.Optional(Type.Integer({ minimum: 1, maximum: 8192 })),
    normalizePath: Type.Optional(Type.Boolean()),
    mergeSlashes: Type.Optional(Type.Boolean()),
    escapedSlashes: Type.Optional(
      Type.Union(
        ['keep', 'reject', 'unescape-and-redirect', 'unescape-and-forward'].map((v) => Type.Literal(v)),
        { description: 'What to do with %2F and %5C in paths.' },
      ),
    ),
    serverName: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    serverHeader: Type.Optional(
      Type.Union(['overwrite', 'append-if-absent', 'pass-through'].map((v) => Type.Literal(v))),
    ),
    generateRequestId: Type.Optional(Type.Boolean()),
    preserveRequestId: Type.Optional(Type.Boolean({ description: "Keep a client's x-request-id." })),
    http2: Type.Optional(
      Type.Object(
        {
          maxConcurrentStreams: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647 })),
          initialStreamWindowSize: Type.Optional(Type.Integer({ minimum: 65535, maximum: 2147483647 })),
          initialConnectionWindowSize: Type.Optional(Type.Integer({ minimum: 65535, maximum: 2147483647 })),
        },
        strict,
      ),
    ),
    http1: Type.Optional(
      Type.Object(
        { properCaseHeaders: Type.Optional(Type.Boolean({ description: 'Write HTTP/1.1 header names Proper-Case.' })) },
        strict,
      ),
    ),
  },
  { ...strict, description: "HTTP: the connection manager's settings." },
);

export type HttpSettingsDoc = Static<typeof HttpSettings>;

export const httpSettingsFields = { listener: { http: Type.Optional(HttpSettings) } } as const;

export interface HttpSettingsListener {
  readonly http?: HttpSettingsDoc;
  readonly virtualHosts?: readonly string[];
}
