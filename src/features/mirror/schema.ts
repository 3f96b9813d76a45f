/** Request mirroring in the YAML model: a route's requests copied to more services. */
import { Type, type Static } from '@sinclair/typebox';
import { Name, strict } from '../kit/schema-primitives.ts';

export const Mirror = Type.Array(
  Type.Object(
    {
      to: Name,
      percent: Type.Optional(
        Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'Share of requests copied (default 100).' }),
      ),
    },
    strict,
  ),
  {
    minItems: 1,
    maxItems: 8,
    description: 'Copies of requests sent to these services too; their answers are dropped.',
  },
);

export type MirrorDoc = Static<typeof Mirror>;

export const mirrorFields = { route: { mirror: Type.Optional(Mirror) } } as const;

/** What mirroring reads of a route: its mirrors, and where the route forwards. */
export interface MirrorRoute {
  readonly mirror?: MirrorDoc;
  readonly to?: string;
  readonly split?: readonly unknown[];
}
