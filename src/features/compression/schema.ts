/** Response compression in the YAML model: a listener's algorithms, off per virtual host or route. */
import { Type, type Static } from '@sinclair/typebox';
import { Enum, strict } from '../kit/schema-primitives.ts';

export const ALGORITHMS = ['gzip', 'brotli', 'zstd'] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

export const Compression = Type.Object(
  {
    algorithms: Type.Array(Enum(ALGORITHMS), {
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

export type CompressionDoc = Static<typeof Compression>;

const Off = Type.Literal(false, { description: 'No response compression here.' });

export const compressionFields = {
  listener: { compression: Type.Optional(Compression) },
  virtualHost: { compression: Type.Optional(Off) },
  route: { compression: Type.Optional(Off) },
} as const;

export interface CompressionListener {
  readonly compression?: CompressionDoc;
  readonly virtualHosts?: readonly string[];
}
export interface CompressionOverride {
  readonly compression?: false;
}
