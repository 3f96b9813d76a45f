import { Codes, type Diagnostic, type DiagnosticCode, type Severity } from '../shared/diagnostics.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import { YamlLocator } from './yaml-locate.ts';
import type { Origin } from './types.ts';
import type { ServiceDoc } from './schema.ts';
import { appendAll } from '../shared/arrays.ts';

/** A document as validation sees it: its origin plus the text needed to locate fields lazily. */
export interface DocRef {
  origin: Origin;
  kind: string;
  name: string;
}

/** Looks a service up for a check, reporting (at `path` of `r`) when it does not exist. */
export type NeedService = (r: DocRef, path: PathSegment[], name: string) => ServiceDoc | undefined;

/** Formats `['routes', 0, 'match']` as `routes[0].match`. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out;
}

/**
 * Collects diagnostics for one validation run. Locations are computed only when a diagnostic is
 * added (valid trees pay nothing), from the file text the source stage kept.
 */
export class DiagnosticSink {
  readonly diagnostics: Diagnostic[] = [];
  private readonly locator = new YamlLocator();

  constructor(private readonly textOf: (file: string) => string | undefined) {}

  add(
    severity: Severity,
    code: DiagnosticCode,
    ref: DocRef | undefined,
    path: readonly PathSegment[],
    message: string,
    at: 'key' | 'value' = 'value',
  ): void {
    const d: Diagnostic = { code, severity, message };
    if (ref) {
      d.subject = `${ref.kind}/${ref.name}`;
      if (path.length) d.path = formatPath(path);
      const text = this.textOf(ref.origin.file);
      const pos =
        text !== undefined
          ? this.locator.locate(text, ref.origin.index, path, at)
          : { line: ref.origin.line, column: 1 };
      d.location = { file: ref.origin.file, line: pos.line, column: pos.column };
    }
    this.diagnostics.push(d);
  }

  error(
    code: DiagnosticCode,
    ref: DocRef | undefined,
    path: readonly PathSegment[],
    message: string,
    at: 'key' | 'value' = 'value',
  ): void {
    this.add('error', code, ref, path, message, at);
  }

  warn(code: DiagnosticCode, ref: DocRef | undefined, path: readonly PathSegment[], message: string): void {
    this.add('warning', code, ref, path, message);
  }

  push(ds: readonly Diagnostic[]): void {
    appendAll(this.diagnostics, ds);
  }
}

export { Codes };
