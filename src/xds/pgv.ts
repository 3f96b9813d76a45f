/**
 * A practical subset of protoc-gen-validate, read from the `(validate.rules)` / `(validate.required)`
 * options the Envoy protos carry. Envoy runs these rules on every resource it receives and NACKs on
 * a violation; running them here turns a fleet-wide NACK into a validation error before apply.
 *
 * Covered: required messages/durations/Any, oneof required, string length/bytes/prefix/suffix/
 * contains/pattern/in/not_in/header regexes, numeric const/lt/lte/gt/gte/in/not_in (also through
 * wrapper types), enum defined_only/in/not_in, repeated and map sizes with per-item rules, duration
 * bounds, Any `in`. Not covered (reported nowhere, Envoy still checks them): email/hostname/ip/uri
 * string formats, timestamp bounds, bytes rules.
 */
import protobuf from 'protobufjs';
import { issueAt, JsonPath, MapKey, type PathKey, type ProtoIssue } from './json-path.ts';

// protoc-gen-validate rule options as protobufjs exposes them (numbers may come as text; a repeated
// option value is a list, or one value when given once).
type Scalar = string | number | boolean;
type OneOrMany<T> = T | T[];

interface StringRules {
  min_len?: Scalar;
  max_len?: Scalar;
  len?: Scalar;
  min_bytes?: Scalar;
  max_bytes?: Scalar;
  prefix?: string;
  suffix?: string;
  contains?: string;
  pattern?: string;
  in?: OneOrMany<string>;
  not_in?: OneOrMany<string>;
  well_known_regex?: string | number;
  strict?: boolean;
  ignore_empty?: boolean;
}

interface NumberRules {
  const?: Scalar;
  gt?: Scalar;
  gte?: Scalar;
  lt?: Scalar;
  lte?: Scalar;
  in?: OneOrMany<Scalar>;
  not_in?: OneOrMany<Scalar>;
  ignore_empty?: boolean;
}

interface EnumRules {
  defined_only?: boolean;
  in?: OneOrMany<number>;
  not_in?: OneOrMany<number>;
}

interface DurationRules {
  required?: boolean;
  gt?: unknown;
  gte?: unknown;
  lt?: unknown;
  lte?: unknown;
}

interface RepeatedRules {
  min_items?: number;
  max_items?: number;
  unique?: boolean;
  items?: Rules;
}

interface MapRules {
  min_pairs?: number;
  max_pairs?: number;
  keys?: { string?: StringRules };
}

const SCALAR_RULE_KINDS = [
  'double',
  'float',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
] as const;

type Rules = {
  message?: { required?: boolean };
  timestamp?: { required?: boolean };
  any?: { required?: boolean; in?: OneOrMany<string> };
  duration?: DurationRules;
  string?: StringRules;
  enum?: EnumRules;
  repeated?: RepeatedRules;
  map?: MapRules;
} & { [K in (typeof SCALAR_RULE_KINDS)[number]]?: NumberRules };

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => v !== null && typeof v === 'object' && !Array.isArray(v);

function deepMerge(a: Plain, b: Plain): Plain {
  for (const [k, v] of Object.entries(b)) {
    const here = a[k];
    if (isPlain(v) && isPlain(here)) deepMerge(here, v);
    else a[k] = v;
  }
  return a;
}

/**
 * Rules of the protos fleetxds loads that every Envoy release it supports (1.36 and later) has
 * since dropped, by field: an empty local rate-limit descriptor value is a wildcard (a bucket per
 * distinct value) in those releases.
 */
const DROPPED_RULES: Readonly<Record<string, string>> = {
  'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry.value': 'string',
};

function fieldRules(field: protobuf.Field): Rules | undefined {
  let rules: Plain | undefined;
  for (const opt of (field.parsedOptions ?? []) as Plain[]) {
    const r = opt['(validate.rules)'];
    if (isPlain(r)) rules = deepMerge(rules ?? {}, r);
  }
  const dropped = DROPPED_RULES[field.fullName.replace(/^\./, '')];
  if (rules && dropped) delete rules[dropped];
  // The options' shapes are PGV's (validate.proto); the checks below read only the fields they name.
  return rules;
}

/**
 * A field's rules, made once per field into a check of its JSON value (undefined: the field is
 * absent), reported at `key` below `at`. Undefined when the field has no rule that can fail.
 */
export type FieldCheck = (raw: unknown, at: JsonPath, key: string, issues: ProtoIssue[]) => void;

/** A check of one present value (`key` below `at`). */
type ValueCheck = (raw: unknown, at: JsonPath, key: PathKey, issues: ProtoIssue[]) => void;

export function compileFieldRules(field: protobuf.Field): FieldCheck | undefined {
  const rules = fieldRules(field);
  if (!rules) return undefined;
  // Rules on a oneof member apply only when that member is the one set.
  const absent = field.partOf ? [] : absentProblems(field, rules);
  const present = field.map
    ? mapCheck(rules.map)
    : field.repeated
      ? repeatedCheck(field, rules.repeated)
      : singleCheck(field, rules);
  if (!absent.length && !present) return undefined;
  return (raw, at, key, issues) => {
    if (raw !== undefined) present?.(raw, at, key, issues);
    else for (const message of absent) issueAt(issues, at, key, message);
  };
}

export function oneofRequired(oneof: protobuf.OneOf): boolean {
  return oneof.options?.['(validate.required)'] === true;
}

/** What an absent field breaks: the same for every message, so found once. */
function absentProblems(field: protobuf.Field, rules: Rules): string[] {
  const out: string[] = [];
  if (rules.message?.required || rules.duration?.required || rules.any?.required || rules.timestamp?.required)
    out.push('is required');
  const minItems = rules.repeated?.min_items ?? 0;
  if (field.repeated && !field.map && minItems > 0) out.push(`needs at least ${minItems} item(s)`);
  const minPairs = rules.map?.min_pairs ?? 0;
  if (field.map && minPairs > 0) out.push(`needs at least ${minPairs} entr(ies)`);
  // proto3 scalars are never "absent": their default value is what PGV checks.
  if (!(field.resolvedType instanceof protobuf.Type) && !field.repeated && !field.map) {
    const found: ProtoIssue[] = [];
    if (field.type === 'string') stringCheck(rules.string)?.('', JsonPath.ROOT, '', found);
    else numberCheck(scalarRules(rules))?.(0, JsonPath.ROOT, '', found);
    out.push(...found.map((i) => i.message));
  }
  return out;
}

function mapCheck(m: MapRules | undefined): ValueCheck | undefined {
  if (!m) return undefined;
  const keys = stringCheck(m.keys?.string);
  return (raw, at, key, issues) => {
    const entries = raw && typeof raw === 'object' ? Object.keys(raw) : [];
    if (m.min_pairs !== undefined && entries.length < m.min_pairs)
      issueAt(issues, at, key, `needs at least ${m.min_pairs} entr(ies)`);
    if (m.max_pairs !== undefined && entries.length > m.max_pairs)
      issueAt(issues, at, key, `allows at most ${m.max_pairs} entr(ies)`);
    if (keys) {
      const here = at.at(key);
      for (const k of entries) keys(k, here, new MapKey(k), issues);
    }
  };
}

function repeatedCheck(field: protobuf.Field, r: RepeatedRules | undefined): ValueCheck | undefined {
  if (!r) return undefined;
  const item = r.items ? singleCheck(field, r.items) : undefined;
  return (raw, at, key, issues) => {
    const items: unknown[] = Array.isArray(raw) ? raw : [];
    if (r.min_items !== undefined && items.length < r.min_items)
      issueAt(issues, at, key, `needs at least ${r.min_items} item(s)`);
    if (r.max_items !== undefined && items.length > r.max_items)
      issueAt(issues, at, key, `allows at most ${r.max_items} item(s)`);
    if (r.unique && new Set(items.map((x) => JSON.stringify(x))).size !== items.length)
      issueAt(issues, at, key, 'items must be unique');
    if (item) {
      const here = at.at(key);
      for (let i = 0; i < items.length; i++) item(items[i], here, i, issues);
    }
  };
}

function scalarRules(rules: Rules): NumberRules | undefined {
  for (const k of SCALAR_RULE_KINDS) if (rules[k]) return rules[k];
  return undefined;
}

/** The checks of one value: string, number (also as a decimal string), enum, duration, Any type. */
function singleCheck(field: protobuf.Field, rules: Rules): ValueCheck | undefined {
  const checks: ValueCheck[] = [];
  const string = stringCheck(rules.string);
  if (string) checks.push((raw, at, key, issues) => typeof raw === 'string' && string(raw, at, key, issues));
  const number = numberCheck(scalarRules(rules));
  if (number)
    checks.push((raw, at, key, issues) => {
      if (typeof raw === 'number' || (typeof raw === 'string' && raw.trim() !== '' && !Number.isNaN(Number(raw))))
        number(Number(raw), at, key, issues);
    });
  const e = field.resolvedType;
  if (rules.enum && e instanceof protobuf.Enum) checks.push(enumCheck(e, rules.enum));
  const duration = rules.duration && durationCheck(rules.duration);
  if (duration) checks.push((raw, at, key, issues) => typeof raw === 'string' && duration(raw, at, key, issues));
  if (rules.any?.in) {
    const allowed = asArray(rules.any.in);
    checks.push((raw, at, key, issues) => {
      const type = isPlain(raw) ? raw['@type'] : undefined;
      if (isPlain(raw) && !(typeof type === 'string' && allowed.includes(type)))
        issueAt(issues, at, key, `@type must be one of ${allowed.join(', ')}`);
    });
  }
  if (!checks.length) return undefined;
  if (checks.length === 1) return checks[0];
  return (raw, at, key, issues) => {
    for (const c of checks) c(raw, at, key, issues);
  };
}

function enumCheck(e: protobuf.Enum, r: EnumRules): ValueCheck {
  const allowed = r.in !== undefined ? asArray(r.in) : undefined;
  const refused = r.not_in !== undefined ? asArray(r.not_in) : undefined;
  return (raw, at, key, issues) => {
    const n = typeof raw === 'string' ? (e.values[raw] ?? Number.NaN) : Number(raw);
    // unknown names are already reported by the converter; only numbers can be undefined values here
    if (r.defined_only && typeof raw === 'number' && e.valuesById[n] === undefined)
      issueAt(issues, at, key, `${String(raw)} is not a defined ${e.name} value`);
    if (allowed && !allowed.includes(n))
      issueAt(issues, at, key, `must be one of ${allowed.map((x) => e.valuesById[x]).join(', ')}`);
    if (refused?.includes(n)) issueAt(issues, at, key, `${String(raw)} is not allowed here`);
  };
}

function asArray<T>(v: T | T[]): T[] {
  return Array.isArray(v) ? v : [v];
}

const HEADER_NAME = /^:?[0-9a-zA-Z!#$%&'*+\-.^_|~`]+$/;
// PGV's well-known regexes exclude control characters on purpose (header injection).
// eslint-disable-next-line no-control-regex -- the rule is about control characters
const HEADER_VALUE = /^[^\u0000-\u0008\u000A-\u001F\u007F]*$/;
// eslint-disable-next-line no-control-regex -- the rule is about control characters
const NO_CRLF_NUL = /^[^\u0000\n\r]*$/;

/** Characters as PGV counts them (code points: a surrogate pair is one). */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

type StringCheck = (s: string, at: JsonPath, key: PathKey, issues: ProtoIssue[]) => void;

function stringCheck(r: StringRules | undefined): StringCheck | undefined {
  if (!r) return undefined;
  const checks: ((s: string) => string | undefined)[] = [];
  const opt = (v: unknown) => (v === undefined ? undefined : Number(v));
  const [minLen, maxLen, len, minBytes, maxBytes] = [r.min_len, r.max_len, r.len, r.min_bytes, r.max_bytes].map(opt);
  const empty = 'is required (must not be empty)';
  if (minLen !== undefined)
    checks.push((s) =>
      codePoints(s) >= minLen ? undefined : s === '' ? empty : `must be at least ${r.min_len} characters`,
    );
  if (maxLen !== undefined)
    checks.push((s) => (codePoints(s) <= maxLen ? undefined : `must be at most ${r.max_len} characters`));
  if (len !== undefined)
    checks.push((s) => (codePoints(s) === len ? undefined : `must be exactly ${r.len} characters`));
  if (minBytes !== undefined)
    checks.push((s) =>
      Buffer.byteLength(s) >= minBytes ? undefined : s === '' ? empty : `must be at least ${r.min_bytes} bytes`,
    );
  if (maxBytes !== undefined)
    checks.push((s) => (Buffer.byteLength(s) <= maxBytes ? undefined : `must be at most ${r.max_bytes} bytes`));
  const { prefix, suffix, contains } = r;
  if (prefix !== undefined) checks.push((s) => (s.startsWith(prefix) ? undefined : `must start with "${prefix}"`));
  if (suffix !== undefined) checks.push((s) => (s.endsWith(suffix) ? undefined : `must end with "${suffix}"`));
  if (contains !== undefined) checks.push((s) => (s.includes(contains) ? undefined : `must contain "${contains}"`));
  if (r.in !== undefined) {
    const allowed = asArray(r.in);
    checks.push((s) => (allowed.includes(s) ? undefined : `must be one of ${allowed.join(', ')}`));
  }
  if (r.not_in !== undefined) {
    const refused = asArray(r.not_in);
    checks.push((s) => (refused.includes(s) ? `"${s}" is not allowed` : undefined));
  }
  const pattern = r.pattern !== undefined ? compiledPattern(r.pattern) : undefined;
  if (pattern) checks.push((s) => (pattern.test(s) ? undefined : `must match ${r.pattern!}`));
  if (r.well_known_regex !== undefined) {
    const name = r.well_known_regex === 'HTTP_HEADER_NAME' || r.well_known_regex === 1;
    const re = r.strict === false ? NO_CRLF_NUL : name ? HEADER_NAME : HEADER_VALUE;
    const message = name ? 'is not a valid HTTP header name' : 'is not a valid HTTP header value';
    checks.push((s) => (s === '' || re.test(s) ? undefined : message));
  }
  if (!checks.length) return undefined;
  return (s, at, key, issues) => {
    if (r.ignore_empty && s === '') return;
    for (const c of checks) {
      const message = c(s);
      if (message) issueAt(issues, at, key, message);
    }
  };
}

function compiledPattern(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, 'u');
  } catch {
    return undefined; // an RE2-only construct; Envoy still checks it
  }
}

type NumberCheck = (n: number, at: JsonPath, key: PathKey, issues: ProtoIssue[]) => void;

function numberCheck(r: NumberRules | undefined): NumberCheck | undefined {
  if (!r) return undefined;
  const checks: ((n: number) => string | undefined)[] = [];
  if (r.const !== undefined) checks.push((n) => (n === Number(r.const) ? undefined : `must equal ${r.const}`));
  if (r.gt !== undefined) checks.push((n) => (n > Number(r.gt) ? undefined : `must be greater than ${r.gt}`));
  if (r.gte !== undefined) checks.push((n) => (n >= Number(r.gte) ? undefined : `must be at least ${r.gte}`));
  if (r.lt !== undefined) checks.push((n) => (n < Number(r.lt) ? undefined : `must be less than ${r.lt}`));
  if (r.lte !== undefined) checks.push((n) => (n <= Number(r.lte) ? undefined : `must be at most ${r.lte}`));
  if (r.in !== undefined) {
    const allowed = asArray(r.in).map(Number);
    checks.push((n) => (allowed.includes(n) ? undefined : `must be one of ${asArray(r.in).join(', ')}`));
  }
  if (r.not_in !== undefined) {
    const refused = asArray(r.not_in).map(Number);
    checks.push((n) => (refused.includes(n) ? `${n} is not allowed` : undefined));
  }
  if (!checks.length) return undefined;
  return (n, at, key, issues) => {
    if (r.ignore_empty && n === 0) return;
    for (const c of checks) {
      const message = c(n);
      if (message) issueAt(issues, at, key, message);
    }
  };
}

function durationNanos(d: unknown): number {
  if (d && typeof d === 'object') {
    const o = d as Record<string, unknown>;
    return Number(o.seconds ?? 0) * 1e9 + Number(o.nanos ?? 0);
  }
  return 0;
}

/** A Duration's proto3 JSON form ("-1.5s"): sign, seconds, up to 9 fractional digits. The converter reads it too. */
export const DURATION_JSON = /^(-)?([0-9]+)(?:\.([0-9]{1,9}))?s$/;

function durationCheck(r: DurationRules): StringCheck | undefined {
  const show = (x: number) => `${x / 1e9}s`;
  const checks: ((n: number) => string | undefined)[] = [];
  const bound = (v: unknown, ok: (n: number, b: number) => boolean, say: string) => {
    if (v === undefined) return;
    const b = durationNanos(v);
    checks.push((n) => (ok(n, b) ? undefined : `${say} ${show(b)}`));
  };
  bound(r.gt, (n, b) => n > b, 'must be longer than');
  bound(r.gte, (n, b) => n >= b, 'must be at least');
  bound(r.lt, (n, b) => n < b, 'must be shorter than');
  bound(r.lte, (n, b) => n <= b, 'must be at most');
  if (!checks.length) return undefined;
  return (text, at, key, issues) => {
    const m = DURATION_JSON.exec(text);
    if (!m) return; // reported by the converter
    const n = (m[1] ? -1 : 1) * (Number(m[2]) * 1e9 + (m[3] ? Number(m[3].padEnd(9, '0')) : 0));
    for (const c of checks) {
      const message = c(n);
      if (message) issueAt(issues, at, key, message);
    }
  };
}
