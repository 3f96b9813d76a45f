/**
 * Diagnostics are values, not exceptions: operator mistakes are collected across a whole tree and
 * reported together, each with a stable code and a location a person can act on.
 */
export type Severity = 'error' | 'warning';

/** A step into a document: a field name or an array index (`['routes', 0, 'match']`). */
export type PathSegment = string | number;

export interface SourceLocation {
  /** Path relative to the config directory, with forward slashes. */
  file: string;
  line: number;
  column: number;
}

export interface Diagnostic {
  code: DiagnosticCode;
  severity: Severity;
  message: string;
  /** Where in the operator's tree; absent only for tree-wide problems (e.g. unreadable directory). */
  location?: SourceLocation;
  /** Document kind/name the problem belongs to, e.g. `VirtualHost/shop`. */
  subject?: string;
  /** Field path inside the document, e.g. `routes[0].match.prefix`. */
  path?: string;
}

/** Stable codes; documented in README ("Validation errors"). Match on these, never on message text. */
export const Codes = {
  YAML_SYNTAX: 'FXDS_YAML_SYNTAX',
  YAML_LIMIT: 'FXDS_YAML_LIMIT',
  FILE_UNREADABLE: 'FXDS_FILE_UNREADABLE',
  DOC_NOT_A_MAP: 'FXDS_DOC_NOT_A_MAP',
  UNKNOWN_KIND: 'FXDS_UNKNOWN_KIND',
  SCHEMA: 'FXDS_SCHEMA',
  UNKNOWN_FIELD: 'FXDS_UNKNOWN_FIELD',
  DUPLICATE_NAME: 'FXDS_DUPLICATE_NAME',
  UNKNOWN_REFERENCE: 'FXDS_UNKNOWN_REFERENCE',
  CONFLICT: 'FXDS_CONFLICT',
  INVALID_VALUE: 'FXDS_INVALID_VALUE',
  CLIENT_COMPAT: 'FXDS_CLIENT_COMPAT',
  ENVOY_RESOURCE: 'FXDS_ENVOY_RESOURCE',
  ENVOY_PATCH: 'FXDS_ENVOY_PATCH',
  SHADOWED_ROUTE: 'FXDS_SHADOWED_ROUTE',
  ENVOY_REJECTED: 'FXDS_ENVOY_REJECTED',
  EMPTY_TREE: 'FXDS_EMPTY_TREE',
  MASS_REMOVAL: 'FXDS_MASS_REMOVAL',
  /** A stage failed on the tree (a fault of fleetxds's, or a limit it did not foresee): refused with the reason. */
  CHECK_FAILED: 'FXDS_CHECK_FAILED',
} as const;
export type DiagnosticCode = (typeof Codes)[keyof typeof Codes];

export function formatDiagnostic(d: Diagnostic): string {
  const where = d.location ? `${d.location.file}:${d.location.line}:${d.location.column}` : '<tree>';
  const subject = d.subject ? `${d.subject}${d.path ? ` ${d.path}` : ''}: ` : d.path ? `${d.path}: ` : '';
  return `${where}: ${d.severity} ${d.code}: ${subject}${d.message}`;
}

/**
 * A refused tree in one line: the first error (what refused it; a warning never stands in for it),
 * where it is, and how many errors and warnings there are in all.
 */
export function refusalSummary(ds: readonly Pick<Diagnostic, 'severity' | 'message' | 'location'>[]): string {
  const errors = ds.filter((d) => d.severity === 'error');
  const first = errors[0] ?? ds[0];
  if (!first) return 'no reason recorded';
  const where = first.location ? `${first.location.file}:${first.location.line}: ` : '';
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
  const warnings = ds.length - errors.length;
  const counts = [count(errors.length, 'error'), ...(warnings ? [count(warnings, 'warning')] : [])].join(', ');
  return `${where}${first.message} (${counts})`;
}

/** Why a server serves nothing yet, as /readyz, the log and systemd's status line say it. */
export function nothingServedReason(f: {
  rejection?: { diagnostics: readonly Pick<Diagnostic, 'severity' | 'message' | 'location'>[] };
  unreadableTree?: { reason: string };
}): string {
  if (f.rejection) return `nothing served yet: the config tree was refused: ${refusalSummary(f.rejection.diagnostics)}`;
  if (f.unreadableTree) return `nothing served yet: the config tree cannot be read: ${f.unreadableTree.reason}`;
  return 'nothing served yet: the config tree has not been read';
}

export function hasErrors(ds: readonly Diagnostic[]): boolean {
  return ds.some((d) => d.severity === 'error');
}

/** Deterministic order: by file, line, column, then message. */
export function sortDiagnostics(ds: Diagnostic[]): Diagnostic[] {
  return ds.sort((a, b) => {
    const fa = a.location?.file ?? '',
      fb = b.location?.file ?? '';
    if (fa !== fb) return fa < fb ? -1 : 1;
    const la = a.location?.line ?? 0,
      lb = b.location?.line ?? 0;
    if (la !== lb) return la - lb;
    const ca = a.location?.column ?? 0,
      cb = b.location?.column ?? 0;
    if (ca !== cb) return ca - cb;
    return a.message < b.message ? -1 : a.message > b.message ? 1 : 0;
  });
}
