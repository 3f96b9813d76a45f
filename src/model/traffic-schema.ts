/**
 * Route features beyond matching, in the YAML model: request mirroring, regex rewrites (of paths
 * and in redirects).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Name, strict } from '../features/kit/schema-primitives.ts';

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

export type MirrorDoc = Static<typeof Mirror>;
export type RegexRewriteDoc = Static<typeof RegexRewrite>;
