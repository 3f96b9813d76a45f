/** Regex rewrites in the YAML model: of a route's path, and in redirects. */
import { Type, type Static } from '@sinclair/typebox';
import { strict } from '../features/kit/schema-primitives.ts';

/** A regex rewrite: matches of `pattern` (RE2) replaced by `substitution` (\1 for a group). */
export const RegexRewrite = Type.Object(
  {
    pattern: Type.String({ minLength: 1, maxLength: 1024, description: 'RE2.' }),
    substitution: Type.String({ maxLength: 1024, description: 'Replaces each match; \\1 .. \\9 for groups.' }),
  },
  strict,
);

export type RegexRewriteDoc = Static<typeof RegexRewrite>;
