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

export interface ProtoIssue {
  path: string;
  message: string;
}

// protoc-gen-validate rule options as protobufjs exposes them: shapes vary per rule type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- PGV rule options
type Rules = Record<string, any>;

/** PGV rules of the compiled-in protos, per field: derived from code, process-wide on purpose. */
const rulesCache = new WeakMap<protobuf.Field, Rules | null>();

function deepMerge(a: Rules, b: Rules): Rules {
  for (const [k, v] of Object.entries(b)) {
    if (v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' && !Array.isArray(a[k]))
      deepMerge(a[k], v);
    else a[k] = v;
  }
  return a;
}

export function fieldRules(field: protobuf.Field): Rules | null {
  let rules = rulesCache.get(field);
  if (rules !== undefined) return rules;
  rules = null;
  for (const opt of (field.parsedOptions ?? []) as Rules[]) {
    const r = opt['(validate.rules)'];
    if (r && typeof r === 'object') rules = deepMerge(rules ?? {}, r);
  }
  rulesCache.set(field, rules);
  return rules;
}

export function checkOneofRules(oneof: protobuf.OneOf, setCount: number, path: string, issues: ProtoIssue[]): void {
  if (setCount === 0 && oneof.options?.['(validate.required)'] === true) {
    issues.push({ path, message: `one of ${oneof.fieldsArray.map((f) => f.name).join(', ')} is required` });
  }
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
];

export function checkFieldRules(
  field: protobuf.Field,
  rules: Rules,
  raw: unknown,
  path: string,
  issues: ProtoIssue[],
): void {
  const isMessage = field.resolvedType instanceof protobuf.Type;
  if (raw === undefined) {
    // Rules on a oneof member apply only when that member is the one set.
    if (field.partOf) return;
    if (rules.message?.required || rules.duration?.required || rules.any?.required || rules.timestamp?.required) {
      issues.push({ path, message: 'is required' });
    }
    if (field.repeated && !field.map && rules.repeated?.min_items > 0)
      issues.push({ path, message: `needs at least ${rules.repeated.min_items} item(s)` });
    if (field.map && rules.map?.min_pairs > 0)
      issues.push({ path, message: `needs at least ${rules.map.min_pairs} entr(ies)` });
    // proto3 scalars are never "absent": their default value is what PGV checks.
    if (!isMessage && !field.repeated && !field.map) {
      if (field.type === 'string') checkString(rules.string, '', path, issues);
      else checkNumber(scalarRules(rules), 0, path, issues);
    }
    return;
  }
  if (field.map) {
    const entries = raw && typeof raw === 'object' ? Object.entries(raw as object) : [];
    const m = rules.map;
    if (m?.min_pairs !== undefined && entries.length < m.min_pairs)
      issues.push({ path, message: `needs at least ${m.min_pairs} entr(ies)` });
    if (m?.max_pairs !== undefined && entries.length > m.max_pairs)
      issues.push({ path, message: `allows at most ${m.max_pairs} entr(ies)` });
    if (m?.keys?.string)
      for (const [k] of entries) checkString(m.keys.string, k, `${path}[${JSON.stringify(k)}]`, issues);
    return;
  }
  if (field.repeated) {
    const items = Array.isArray(raw) ? raw : [];
    const r = rules.repeated;
    if (r?.min_items !== undefined && items.length < r.min_items)
      issues.push({ path, message: `needs at least ${r.min_items} item(s)` });
    if (r?.max_items !== undefined && items.length > r.max_items)
      issues.push({ path, message: `allows at most ${r.max_items} item(s)` });
    if (r?.unique && new Set(items.map((x) => JSON.stringify(x))).size !== items.length)
      issues.push({ path, message: 'items must be unique' });
    if (r?.items) for (const [i, x] of items.entries()) checkSingle(field, r.items, x, `${path}[${i}]`, issues);
    return;
  }
  checkSingle(field, rules, raw, path, issues);
}

function scalarRules(rules: Rules): Rules | undefined {
  for (const k of SCALAR_RULE_KINDS) if (rules[k]) return rules[k];
  return undefined;
}

function checkSingle(field: protobuf.Field, rules: Rules, raw: unknown, path: string, issues: ProtoIssue[]): void {
  if (rules.string && typeof raw === 'string') checkString(rules.string, raw, path, issues);
  const num = scalarRules(rules);
  if (num && (typeof raw === 'number' || (typeof raw === 'string' && raw.trim() !== '' && !Number.isNaN(Number(raw)))))
    checkNumber(num, Number(raw), path, issues);
  if (rules.enum && field.resolvedType instanceof protobuf.Enum) {
    const e = field.resolvedType;
    const n = typeof raw === 'string' ? (e.values[raw] ?? Number.NaN) : Number(raw);
    // unknown names are already reported by the converter; only numbers can be undefined values here
    if (rules.enum.defined_only && typeof raw === 'number' && e.valuesById[n] === undefined)
      issues.push({ path, message: `${String(raw)} is not a defined ${e.name} value` });
    if (rules.enum.in && !asArray(rules.enum.in).includes(n))
      issues.push({
        path,
        message: `must be one of ${asArray(rules.enum.in)
          .map((x: number) => e.valuesById[x])
          .join(', ')}`,
      });
    if (rules.enum.not_in && asArray(rules.enum.not_in).includes(n))
      issues.push({ path, message: `${String(raw)} is not allowed here` });
  }
  if (rules.duration && typeof raw === 'string') checkDuration(rules.duration, raw, path, issues);
  if (rules.any?.in && raw && typeof raw === 'object') {
    const t = (raw as Record<string, unknown>)['@type'];
    if (!asArray(rules.any.in).includes(t))
      issues.push({ path, message: `@type must be one of ${asArray(rules.any.in).join(', ')}` });
  }
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

function checkString(r: Rules | undefined, s: string, path: string, issues: ProtoIssue[]): void {
  if (!r) return;
  if (r.ignore_empty && s === '') return;
  const len = [...s].length;
  if (r.min_len !== undefined && len < Number(r.min_len))
    issues.push({
      path,
      message: s === '' ? 'is required (must not be empty)' : `must be at least ${r.min_len} characters`,
    });
  if (r.max_len !== undefined && len > Number(r.max_len))
    issues.push({ path, message: `must be at most ${r.max_len} characters` });
  if (r.len !== undefined && len !== Number(r.len))
    issues.push({ path, message: `must be exactly ${r.len} characters` });
  const bytes = Buffer.byteLength(s);
  if (r.min_bytes !== undefined && bytes < Number(r.min_bytes))
    issues.push({
      path,
      message: s === '' ? 'is required (must not be empty)' : `must be at least ${r.min_bytes} bytes`,
    });
  if (r.max_bytes !== undefined && bytes > Number(r.max_bytes))
    issues.push({ path, message: `must be at most ${r.max_bytes} bytes` });
  if (r.prefix !== undefined && !s.startsWith(r.prefix))
    issues.push({ path, message: `must start with "${r.prefix}"` });
  if (r.suffix !== undefined && !s.endsWith(r.suffix)) issues.push({ path, message: `must end with "${r.suffix}"` });
  if (r.contains !== undefined && !s.includes(r.contains))
    issues.push({ path, message: `must contain "${r.contains}"` });
  if (r.in !== undefined && !asArray(r.in).includes(s))
    issues.push({ path, message: `must be one of ${asArray(r.in).join(', ')}` });
  if (r.not_in !== undefined && asArray(r.not_in).includes(s)) issues.push({ path, message: `"${s}" is not allowed` });
  if (r.pattern !== undefined) {
    let re: RegExp | undefined;
    try {
      re = new RegExp(r.pattern, 'u');
    } catch {
      re = undefined; // an RE2-only construct; Envoy still checks it
    }
    if (re && !re.test(s)) issues.push({ path, message: `must match ${r.pattern}` });
  }
  if (r.well_known_regex !== undefined) {
    const strict = r.strict !== false;
    const kind = r.well_known_regex;
    const re = !strict ? NO_CRLF_NUL : kind === 'HTTP_HEADER_NAME' || kind === 1 ? HEADER_NAME : HEADER_VALUE;
    if (s !== '' && !re.test(s))
      issues.push({
        path,
        message:
          kind === 'HTTP_HEADER_NAME' || kind === 1
            ? 'is not a valid HTTP header name'
            : 'is not a valid HTTP header value',
      });
  }
}

function checkNumber(r: Rules | undefined, n: number, path: string, issues: ProtoIssue[]): void {
  if (!r) return;
  if (r.ignore_empty && n === 0) return;
  if (r.const !== undefined && n !== Number(r.const)) issues.push({ path, message: `must equal ${r.const}` });
  if (r.gt !== undefined && !(n > Number(r.gt))) issues.push({ path, message: `must be greater than ${r.gt}` });
  if (r.gte !== undefined && !(n >= Number(r.gte))) issues.push({ path, message: `must be at least ${r.gte}` });
  if (r.lt !== undefined && !(n < Number(r.lt))) issues.push({ path, message: `must be less than ${r.lt}` });
  if (r.lte !== undefined && !(n <= Number(r.lte))) issues.push({ path, message: `must be at most ${r.lte}` });
  if (r.in !== undefined && !asArray(r.in).map(Number).includes(n))
    issues.push({ path, message: `must be one of ${asArray(r.in).join(', ')}` });
  if (r.not_in !== undefined && asArray(r.not_in).map(Number).includes(n))
    issues.push({ path, message: `${n} is not allowed` });
}

function durationNanos(d: unknown): number {
  if (d && typeof d === 'object') {
    const o = d as Record<string, unknown>;
    return Number(o.seconds ?? 0) * 1e9 + Number(o.nanos ?? 0);
  }
  return 0;
}

function checkDuration(r: Rules, text: string, path: string, issues: ProtoIssue[]): void {
  const m = /^(-)?([0-9]+)(?:\.([0-9]{1,9}))?s$/.exec(text);
  if (!m) return; // reported by the converter
  const n = (m[1] ? -1 : 1) * (Number(m[2]) * 1e9 + (m[3] ? Number(m[3].padEnd(9, '0')) : 0));
  const show = (x: number) => `${x / 1e9}s`;
  if (r.gt !== undefined && !(n > durationNanos(r.gt)))
    issues.push({ path, message: `must be longer than ${show(durationNanos(r.gt))}` });
  if (r.gte !== undefined && !(n >= durationNanos(r.gte)))
    issues.push({ path, message: `must be at least ${show(durationNanos(r.gte))}` });
  if (r.lt !== undefined && !(n < durationNanos(r.lt)))
    issues.push({ path, message: `must be shorter than ${show(durationNanos(r.lt))}` });
  if (r.lte !== undefined && !(n <= durationNanos(r.lte)))
    issues.push({ path, message: `must be at most ${show(durationNanos(r.lte))}` });
}
