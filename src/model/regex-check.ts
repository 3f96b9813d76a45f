import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef } from './diagnostic-sink.ts';
import { ENVOY_RE2_MAX_PROGRAM_SIZE, ENVOY_REGEX_RELEASES, envoyRegexRefusal } from './re2-program.ts';

type Refusals = (ReleaseRegex & { refusal: NonNullable<ReturnType<typeof envoyRegexRefusal>> })[];
type ReleaseRegex = (typeof ENVOY_REGEX_RELEASES)[number];

/**
 * Each release's refusal of a pattern, by pattern: a tree repeats patterns (the same rewrite on
 * every virtual host), and the RE2 model is the costly part of a check. Patterns come from the
 * operator's tree; the memory is bounded all the same (cleared past MAX_REMEMBERED).
 */
const remembered = new Map<string, Refusals>();
const MAX_REMEMBERED = 50_000;

function refusalsOf(re: string): Refusals {
  let out = remembered.get(re);
  if (out) return out;
  out = ENVOY_REGEX_RELEASES.flatMap((v) => {
    const refusal = envoyRegexRefusal(re, v.encoding);
    return refusal ? [{ ...v, refusal }] : [];
  });
  if (remembered.size >= MAX_REMEMBERED) remembered.clear();
  remembered.set(re, out);
  return out;
}

/**
 * Envoy and gRPC use RE2: its syntax (no lookaround, no backreferences, repeats up to 1000) and
 * Envoy's program size limit, as each Envoy release applies them (re2-program.ts).
 */
export function checkRegex(re: string, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  const refusals = refusalsOf(re);
  if (!refusals.length) return;
  const syntax = refusals.filter((v) => v.refusal.syntax);
  if (syntax.length) {
    const who =
      syntax.length === ENVOY_REGEX_RELEASES.length ? '' : ` (Envoy ${syntax.map((v) => v.release).join(', ')})`;
    sink.error(
      Codes.INVALID_VALUE,
      r,
      path,
      `invalid RE2 regular expression (the syntax Envoy and gRPC use)${who}: ${syntax[0]!.refusal.syntax}` +
        (syntax.some((v) => v.encoding === 'latin1') && syntax.length < ENVOY_REGEX_RELEASES.length
          ? '; Envoy 1.40 reads patterns as Latin-1: no escape above \\x{FF}'
          : ''),
    );
    return;
  }
  const sizes = refusals.map((v) => `${v.refusal.size} for Envoy ${v.release}`).join(', ');
  sink.error(
    Codes.INVALID_VALUE,
    r,
    path,
    `RE2 program size of ${sizes} is over Envoy's limit of ${ENVOY_RE2_MAX_PROGRAM_SIZE}, so Envoy would ` +
      `reject it; simplify the pattern (a bounded repeat like {1,60} costs its body once per repetition: ` +
      `prefer + or *)`,
  );
}
