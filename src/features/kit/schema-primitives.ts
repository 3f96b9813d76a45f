/** The building blocks every part of the YAML model's schema uses. */
import { Type } from '@sinclair/typebox';
import { DURATION_PATTERN } from '../../shared/duration.ts';

export const strict = { additionalProperties: false } as const;

export function Enum<T extends string>(values: readonly T[], description?: string) {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    { description },
  );
}

/** The one rule for names; they also become file and folder names (rendered files), so never "..". */
export const NAME_PATTERN = '^(?!.*\\.\\.)[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$';
export const Name = Type.String({
  pattern: NAME_PATTERN,
  description:
    'Lower-case letters, digits, ".", "_" and "-"; 1 to 63 characters; starts and ends with a letter or digit; ' +
    'no "..".',
});
export const Duration = Type.String({
  pattern: DURATION_PATTERN,
  description: 'A duration such as 250ms, 5s, 1.5s, 2m or 1h.',
});
export const Port = Type.Integer({ minimum: 1, maximum: 65535 });
export const PositiveInt = Type.Integer({ minimum: 1, maximum: 4294967295 });
export const NonEmpty = Type.String({ minLength: 1, maxLength: 4096 });
