import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef } from './diagnostic-sink.ts';
import { ENVOY_RE2_MAX_PROGRAM_SIZE, ENVOY_REGEX_RELEASES, envoyRegexRefusal } from './re2-program.ts';

/**
 * Envoy and gRPC use RE2: its syntax (no lookaround, no backreferences, repeats up to 1000) and
 * Envoy's program size limit, as each Envoy release applies them (re2-program.ts).
 */
export function checkRegex(re: string, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  const refusals = ENVOY_REGEX_RELEASES.map((v) => ({ ...v, refusal: envoyRegexRefusal(re, v.encoding) })).filter(
    (v) => v.refusal,
  );
  if (!refusals.length) return;
  const syntax = refusals.filter((v) => v.refusal!.syntax);
  if (syntax.length) {
    const who =
      syntax.length === ENVOY_REGEX_RELEASES.length ? '' : ` (Envoy ${syntax.map((v) => v.release).join(', ')})`;
    sink.error(
      Codes.INVALID_VALUE,
      r,
      path,
      `invalid RE2 regular expression (the syntax Envoy and gRPC use)${who}: ${syntax[0]!.refusal!.syntax}` +
        (syntax.some((v) => v.encoding === 'latin1') && syntax.length < ENVOY_REGEX_RELEASES.length
          ? '; Envoy 1.40 reads patterns as Latin-1: no escape above \\x{FF}'
          : ''),
    );
    return;
  }
  const sizes = refusals.map((v) => `${v.refusal!.size} for Envoy ${v.release}`).join(', ');
  sink.error(
    Codes.INVALID_VALUE,
    r,
    path,
    `RE2 program size of ${sizes} is over Envoy's limit of ${ENVOY_RE2_MAX_PROGRAM_SIZE}, so Envoy would ` +
      `reject it; simplify the pattern (a bounded repeat like {1,60} costs its body once per repetition: ` +
      `prefer + or *)`,
  );
}
