/**
 * Proto3 JSON <-> protobufjs messages, driven by reflection over the loaded Envoy protos.
 *
 * protobufjs has no canonical proto3 JSON mapping (Duration as "5s", wrappers as bare values,
 * Struct as plain objects, Any with "@type"), and its `fromObject` silently drops unknown keys.
 * Envoy's own JSON/YAML, our golden files, the REST transport and the rendered files all use the
 * canonical form, so this module converts it strictly: unknown fields, wrong types, several
 * members of one oneof and violated protoc-gen-validate rules (see pgv.ts) are reported with a
 * JSON path instead of being dropped.
 */
import protobuf from 'protobufjs';
import { lookupType } from './proto-root.ts';
import { compileFieldRules, DURATION_JSON, oneofRequired, type FieldCheck } from './pgv.ts';
import { issueAt, JsonPath, MapKey, type PathKey, type ProtoIssue } from './json-path.ts';

export type { ProtoIssue } from './json-path.ts';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = Record<string, unknown>;

const WRAPPERS = new Set([
  'google.protobuf.DoubleValue',
  'google.protobuf.FloatValue',
  'google.protobuf.Int64Value',
  'google.protobuf.UInt64Value',
  'google.protobuf.Int32Value',
  'google.protobuf.UInt32Value',
  'google.protobuf.BoolValue',
  'google.protobuf.StringValue',
  'google.protobuf.BytesValue',
]);

/**
 * Converts one JSON value of a field to what protobufjs's encoder takes, reporting problems at
 * `key` below `at` (at `at` itself without a key).
 */
type Convert = (value: unknown, at: JsonPath, key: PathKey | undefined, issues: ProtoIssue[]) => unknown;

interface FieldPlan {
  /** The proto field name: the key protobufjs's encoder reads. */
  readonly name: string;
  /** Position in the type's fields (for oneofs and rules). */
  readonly index: number;
  /** google.protobuf.Value takes JSON null as a value; every other field treats null as absent. */
  readonly keepNull: boolean;
  /** The field's whole value: a map, a list or one value. */
  readonly convert: Convert;
  readonly check?: FieldCheck;
}

interface OneofPlan {
  readonly name: string;
  /** The members' positions in the type's fields, and their names. */
  readonly members: readonly number[];
  readonly names: readonly string[];
  /** `(validate.required)`: one member must be set. */
  readonly required: boolean;
}

/**
 * How to convert JSON to a message of one type, worked out once per type from the loaded protos:
 * a cold build converts tens of thousands of messages, and a conversion that asked protobufjs's
 * reflection what each field is (and re-read the validation rules) cost three times the encoding.
 */
interface TypePlan {
  /** Full name without the leading dot. */
  readonly name: string;
  /** A well-known type with a JSON form of its own. */
  readonly wkt?: (json: unknown, at: JsonPath, issues: ProtoIssue[]) => unknown;
  /** Fields by proto name and by lowerCamelCase JSON name. */
  readonly fields: ReadonlyMap<string, FieldPlan>;
  readonly fieldCount: number;
  readonly oneofs: readonly OneofPlan[];
  /** Fields with protoc-gen-validate rules, checked present or not. */
  readonly ruled: readonly (FieldPlan & { readonly check: FieldCheck })[];
}

/**
 * Plans of the compiled-in Envoy protos, keyed by their protobufjs types: derived from code,
 * identical for every pipeline, so process-wide on purpose (not a cache of served data).
 */
const plans = new WeakMap<protobuf.Type, TypePlan>();

function planOf(type: protobuf.Type): TypePlan {
  let plan = plans.get(type);
  if (!plan) {
    const name = type.fullName.replace(/^\./, '');
    const fields = new Map<string, FieldPlan>();
    const list = type.fieldsArray.map((f, index) => {
      const check = compileFieldRules(f);
      const p: FieldPlan = {
        name: f.name,
        index,
        keepNull: f.resolvedType instanceof protobuf.Type && f.resolvedType.fullName === '.google.protobuf.Value',
        convert: fieldConverter(f),
        ...(check && { check }),
      };
      fields.set(f.name, p);
      fields.set(lowerCamel(f.name), p);
      return p;
    });
    const oneofs = type.oneofsArray.map((oneof) => ({
      name: oneof.name,
      members: oneof.fieldsArray.map((f) => type.fieldsArray.indexOf(f)),
      names: oneof.fieldsArray.map((f) => f.name),
      required: oneofRequired(oneof),
    }));
    const ruled = list.filter((p): p is FieldPlan & { check: FieldCheck } => p.check !== undefined);
    const wkt = wktConverter(name, type);
    plan = { name, ...(wkt && { wkt }), fields, fieldCount: list.length, oneofs, ruled };
    plans.set(type, plan);
  }
  return plan;
}

function lowerCamel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Types by full name, looked up once each (protobufjs resolves the path on every lookup); null: none. */
const typesByName = new Map<string, protobuf.Type | null>();

function typeNamed(name: string): protobuf.Type | undefined {
  let type = typesByName.get(name);
  if (type === undefined) {
    try {
      type = lookupType(name);
    } catch {
      type = null;
    }
    typesByName.set(name, type);
  }
  return type ?? undefined;
}

/** The message type an Any's "@type" URL names. */
function typeOfUrl(url: string): protobuf.Type | undefined {
  return typeNamed(url.slice(url.lastIndexOf('/') + 1));
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** The path of `key` below `at`, or `at` itself. */
function below(at: JsonPath, key: PathKey | undefined): JsonPath {
  return key === undefined ? at : at.at(key);
}

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// ------------------------------------------------------------------------------------------------
// JSON -> object protobufjs's encoder takes (encodeObject)

/** A message's JSON converted strictly; every problem is added to `issues` with its path. */
export function jsonToObject(type: protobuf.Type, json: unknown, issues: ProtoIssue[]): Obj {
  return messageFromJson(planOf(type), json, JsonPath.ROOT, issues) as Obj;
}

function messageFromJson(plan: TypePlan, json: unknown, at: JsonPath, issues: ProtoIssue[]): unknown {
  if (plan.wkt) return plan.wkt(json, at, issues);
  if (!isObject(json)) {
    issues.push({ path: at.toString(), message: `expected an object for ${plan.name}, got ${describe(json)}` });
    return {};
  }
  const out: Obj = {};
  // Which fields are set matters only to oneofs and validation rules; most types have neither.
  const present = plan.oneofs.length || plan.ruled.length ? new Array<unknown>(plan.fieldCount) : undefined;
  for (const key in json) {
    const value = json[key];
    // Not a JSON value: a key whose value is undefined is no key (as JSON.stringify has it).
    if (value === undefined) continue;
    const field = plan.fields.get(key);
    if (!field) {
      issueAt(issues, at, key, `unknown field "${key}" in ${plan.name}`);
      continue;
    }
    if (value === null && !field.keepNull) continue;
    if (present) present[field.index] = value;
    out[field.name] = field.convert(value, at, key, issues);
  }
  if (!present) return out;
  for (const oneof of plan.oneofs) {
    const set = oneof.names.filter((_, i) => present[oneof.members[i]!] !== undefined);
    if (set.length > 1) {
      issues.push({
        path: at.toString(),
        message: `only one of ${oneof.names.join(', ')} may be set (oneof ${oneof.name}); got ${set.join(', ')}`,
      });
    }
    if (set.length === 0 && oneof.required)
      issues.push({ path: at.toString(), message: `one of ${oneof.names.join(', ')} is required` });
  }
  for (const field of plan.ruled) field.check(present[field.index], at, field.name, issues);
  return out;
}

/** A field's converter: a map or a list of its single values, or one. */
function fieldConverter(field: protobuf.Field): Convert {
  const single = singleConverter(field);
  if (field.map)
    return (value, at, key, issues) => {
      if (!isObject(value)) {
        issueAt(issues, at, key, `expected an object (map), got ${describe(value)}`);
        return {};
      }
      const here = below(at, key);
      const out: Obj = {};
      for (const k of Object.keys(value)) out[k] = single(value[k], here, new MapKey(k), issues);
      return out;
    };
  if (field.repeated)
    return (value, at, key, issues) => {
      if (!Array.isArray(value)) {
        issueAt(issues, at, key, `expected an array, got ${describe(value)}`);
        return [];
      }
      const here = below(at, key);
      const out = new Array<unknown>(value.length);
      for (let i = 0; i < value.length; i++) out[i] = single(value[i], here, i, issues);
      return out;
    };
  return single;
}

function singleConverter(field: protobuf.Field): Convert {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) {
    // Resolved on first use: types refer to themselves and to each other.
    let plan: TypePlan | undefined;
    return (value, at, key, issues) => messageFromJson((plan ??= planOf(rt)), value, below(at, key), issues);
  }
  if (rt instanceof protobuf.Enum) return enumConverter(rt);
  return scalarConverter(field.type);
}

function enumConverter(e: protobuf.Enum): Convert {
  const names = Object.keys(e.values);
  return (value, at, key, issues) => {
    if (typeof value === 'string') {
      if (Object.hasOwn(e.values, value)) return e.values[value];
      issueAt(issues, at, key, `"${value}" is not a value of ${e.name} (one of ${names.join(', ')})`);
      return 0;
    }
    if (typeof value === 'number' && Number.isInteger(value)) return value;
    issueAt(issues, at, key, `expected an enum name of ${e.name}, got ${describe(value)}`);
    return 0;
  };
}

const INT_RANGES: Record<string, [number, number]> = {
  int32: [-2147483648, 2147483647],
  sint32: [-2147483648, 2147483647],
  sfixed32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  fixed32: [0, 4294967295],
};

function scalarConverter(type: string): Convert {
  switch (type) {
    case 'string':
      return (value, at, key, issues) => {
        if (typeof value === 'string') return value;
        issueAt(issues, at, key, `expected a string, got ${describe(value)}`);
        return '';
      };
    case 'bool':
      return (value, at, key, issues) => {
        if (typeof value !== 'boolean') issueAt(issues, at, key, `expected a boolean, got ${describe(value)}`);
        return value === true;
      };
    case 'double':
    case 'float':
      return (value, at, key, issues) => {
        if (typeof value === 'number') return value;
        if (value === 'NaN' || value === 'Infinity' || value === '-Infinity') return Number(value);
        if (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))) return Number(value);
        issueAt(issues, at, key, `expected a number, got ${describe(value)}`);
        return 0;
      };
    case 'bytes':
      return (value, at, key, issues) => {
        if (typeof value !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(value)) {
          issueAt(issues, at, key, 'expected base64 bytes');
          return new Uint8Array();
        }
        return Buffer.from(value, 'base64');
      };
  }
  // integer types
  const range = INT_RANGES[type];
  const unsigned = type === 'uint64' || type === 'fixed64';
  return (value, at, key, issues) => {
    const isInt =
      (typeof value === 'number' && Number.isInteger(value)) || (typeof value === 'string' && /^-?[0-9]+$/.test(value));
    if (!isInt) {
      issueAt(issues, at, key, `expected an integer (${type}), got ${describe(value)}`);
      return 0;
    }
    if (range) {
      const n = Number(value);
      if (n < range[0] || n > range[1]) issueAt(issues, at, key, `${value} is out of range for ${type}`);
      return n;
    }
    if (unsigned && String(value).startsWith('-'))
      issueAt(issues, at, key, `${value} is negative but ${type} is unsigned`);
    return value; // protobufjs accepts decimal strings for 64-bit
  };
}

/** A field of a well-known type, present by definition (a missing one means corrupt protos). */
function fieldOf(type: protobuf.Type, id: number): protobuf.Field {
  const f = type.fieldsById[id];
  if (!f) throw new Error(`${type.fullName} has no field ${id}`);
  return f;
}

function fieldById(type: protobuf.Type, id: number): string {
  return fieldOf(type, id).name;
}

/** The converter of a well-known type with a JSON form of its own; undefined for any other type. */
function wktConverter(name: string, type: protobuf.Type): TypePlan['wkt'] {
  switch (name) {
    case 'google.protobuf.Duration': {
      const [seconds, nanos] = [fieldById(type, 1), fieldById(type, 2)];
      return (json, at, issues) => {
        const m = typeof json === 'string' ? DURATION_JSON.exec(json) : null;
        if (!m) {
          issues.push({ path: at.toString(), message: `expected a duration like "1.5s", got ${JSON.stringify(json)}` });
          return {};
        }
        const sign = m[1] ? -1 : 1;
        const s = Number(m[2]);
        if (s > 315576000000) issues.push({ path: at.toString(), message: 'duration out of range' });
        return { [seconds]: sign * s, [nanos]: m[3] ? sign * Number(m[3].padEnd(9, '0')) : 0 };
      };
    }
    case 'google.protobuf.Timestamp': {
      const [seconds, nanos] = [fieldById(type, 1), fieldById(type, 2)];
      return (json, at, issues) => {
        const t = typeof json === 'string' ? parseTimestamp(json) : undefined;
        if (!t) {
          issues.push({ path: at.toString(), message: `expected an RFC 3339 timestamp, got ${JSON.stringify(json)}` });
          return {};
        }
        return { [seconds]: t.seconds, [nanos]: t.nanos };
      };
    }
    case 'google.protobuf.Empty':
      return (json, at, issues) => {
        if (!isObject(json) || Object.keys(json).length)
          issues.push({ path: at.toString(), message: 'expected {} for google.protobuf.Empty' });
        return {};
      };
    case 'google.protobuf.FieldMask': {
      const paths = fieldById(type, 1);
      return (json, at, issues) => {
        if (typeof json === 'string') return { [paths]: json === '' ? [] : json.split(',') };
        issues.push({ path: at.toString(), message: 'expected a comma-separated field mask string' });
        return {};
      };
    }
    case 'google.protobuf.Struct':
      return (json, at, issues) => structFromJson(type, json, at, issues);
    case 'google.protobuf.Value':
      return (json, at, issues) => valueFromJson(type, json, at, issues);
    case 'google.protobuf.ListValue':
      return (json, at, issues) => listFromJson(type, json, at, issues);
    case 'google.protobuf.Any':
      return (json, at, issues) => anyFromJson(type, json, at, issues);
  }
  if (!WRAPPERS.has(name)) return undefined;
  const f = fieldOf(type, 1);
  const convert = scalarConverter(f.type);
  return (json, at, issues) => ({ [f.name]: convert(json, at, undefined, issues) });
}

function structFromJson(type: protobuf.Type, json: unknown, at: JsonPath, issues: ProtoIssue[]): Obj {
  if (!isObject(json)) {
    issues.push({ path: at.toString(), message: `expected an object (Struct), got ${describe(json)}` });
    return {};
  }
  const fieldsField = fieldOf(type, 1);
  const valueType = fieldsField.resolvedType as protobuf.Type;
  const fields: Obj = {};
  for (const [k, v] of Object.entries(json)) fields[k] = valueFromJson(valueType, v, at.at(k), issues);
  return { [fieldsField.name]: fields };
}

function listFromJson(type: protobuf.Type, json: unknown, at: JsonPath, issues: ProtoIssue[]): Obj {
  if (!Array.isArray(json)) {
    issues.push({ path: at.toString(), message: `expected an array, got ${describe(json)}` });
    return {};
  }
  const valueType = fieldOf(type, 1).resolvedType as protobuf.Type;
  return { [fieldById(type, 1)]: json.map((v, i) => valueFromJson(valueType, v, at.at(i), issues)) };
}

function valueFromJson(type: protobuf.Type, json: unknown, at: JsonPath, issues: ProtoIssue[]): Obj {
  // Field names come from reflection: protobufjs defines Struct/Value with camelCase names.
  if (json === null) return { [fieldById(type, 1)]: 0 };
  if (typeof json === 'number') return { [fieldById(type, 2)]: json };
  if (typeof json === 'string') return { [fieldById(type, 3)]: json };
  if (typeof json === 'boolean') return { [fieldById(type, 4)]: json };
  if (Array.isArray(json))
    return { [fieldById(type, 6)]: listFromJson(fieldOf(type, 6).resolvedType as protobuf.Type, json, at, issues) };
  if (typeof json === 'object')
    return { [fieldById(type, 5)]: structFromJson(fieldOf(type, 5).resolvedType as protobuf.Type, json, at, issues) };
  issues.push({ path: at.toString(), message: `unsupported JSON value ${describe(json)}` });
  return {};
}

function anyFromJson(type: protobuf.Type, json: unknown, at: JsonPath, issues: ProtoIssue[]): Obj {
  if (!isObject(json)) {
    issues.push({ path: at.toString(), message: `expected an object with "@type", got ${describe(json)}` });
    return {};
  }
  const { '@type': typeUrl, ...rest } = json;
  if (typeof typeUrl !== 'string' || !typeUrl.includes('/')) {
    issues.push({ path: at.toString(), message: 'Any needs an "@type" like "type.googleapis.com/<message>"' });
    return {};
  }
  const inner = typeOfUrl(typeUrl);
  if (!inner) {
    issueAt(issues, at, '@type', `unknown message type ${typeUrl}`);
    return {};
  }
  const plan = planOf(inner);
  const obj = messageFromJson(plan, plan.wkt ? rest.value : rest, at, issues) as Obj;
  return { [fieldById(type, 1)]: typeUrl, [fieldById(type, 2)]: encodeObject(inner, obj) };
}

// ------------------------------------------------------------------------------------------------
// Public helpers

export interface EncodeResult {
  bytes: Uint8Array;
  issues: ProtoIssue[];
}

/** Strictly converts canonical proto3 JSON and encodes it; `issues` lists everything wrong. */
export function encodeJson(typeName: string, json: unknown): EncodeResult {
  const type = typeNamed(typeName) ?? lookupType(typeName); // the second throws the lookup's error
  const issues: ProtoIssue[] = [];
  const obj = jsonToObject(type, json, issues);
  return { bytes: encodeObject(type, obj), issues };
}

/**
 * Encodes what jsonToObject made. Its values already have the types protobufjs's encoder writes
 * (enums as numbers, bytes as buffers, 64-bit integers as numbers or decimal strings, nested
 * objects), so the encoder takes it as it is: `fromObject` would copy every message into a
 * protobufjs instance first (a third of the encode, same bytes: a test compares the two).
 */
export function encodeObject(type: protobuf.Type, obj: Obj): Uint8Array {
  return type.encode(obj).finish();
}

/** Decodes bytes into canonical proto3 JSON (used to read back what we serve, in tests and CLIs). */
export function decodeToJson(typeName: string, bytes: Uint8Array): Json {
  const type = lookupType(typeName);
  return messageToJson(type, type.decode(bytes));
}

export function messageToJson(type: protobuf.Type, message: protobuf.Message | Obj): Json {
  const name = planOf(type).name;
  const m = message as Obj;
  switch (name) {
    case 'google.protobuf.Duration': {
      const s = toNum(m[fieldById(type, 1)]);
      const n = toNum(m[fieldById(type, 2)]);
      const neg = s < 0 || n < 0;
      const frac = Math.abs(n) ? `.${String(Math.abs(n)).padStart(9, '0').replace(/0+$/, '')}` : '';
      return `${neg ? '-' : ''}${Math.abs(s)}${frac}s`;
    }
    case 'google.protobuf.Timestamp':
      return timestampJson(toNum(m[fieldById(type, 1)]), toNum(m[fieldById(type, 2)]));
    case 'google.protobuf.Empty':
      return {};
    case 'google.protobuf.FieldMask':
      return ((m[fieldById(type, 1)] as string[]) ?? []).join(',');
    case 'google.protobuf.Struct': {
      const valueType = fieldOf(type, 1).resolvedType as protobuf.Type;
      const out: { [k: string]: Json } = {};
      const fields = (m[fieldById(type, 1)] ?? {}) as Obj;
      for (const k of Object.keys(fields)) out[k] = messageToJson(valueType, fields[k] as Obj);
      return out;
    }
    case 'google.protobuf.Value': {
      if (hasOwn(m, fieldById(type, 2))) return Number(m[fieldById(type, 2)]);
      if (hasOwn(m, fieldById(type, 3))) return m[fieldById(type, 3)] as string;
      if (hasOwn(m, fieldById(type, 4))) return m[fieldById(type, 4)] as boolean;
      if (hasOwn(m, fieldById(type, 5)))
        return messageToJson(fieldOf(type, 5).resolvedType as protobuf.Type, m[fieldById(type, 5)] as Obj);
      if (hasOwn(m, fieldById(type, 6)))
        return messageToJson(fieldOf(type, 6).resolvedType as protobuf.Type, m[fieldById(type, 6)] as Obj);
      return null;
    }
    case 'google.protobuf.ListValue': {
      const valueType = fieldOf(type, 1).resolvedType as protobuf.Type;
      return ((m[fieldById(type, 1)] as Obj[]) ?? []).map((v) => messageToJson(valueType, v));
    }
    case 'google.protobuf.Any': {
      const url = (m[fieldById(type, 1)] as string | undefined) ?? '';
      const inner = typeOfUrl(url);
      const value = (m[fieldById(type, 2)] as Uint8Array) ?? new Uint8Array();
      if (!inner) return { '@type': url, value: Buffer.from(value).toString('base64') };
      const decoded = messageToJson(inner, inner.decode(value));
      const innerName = planOf(inner).name;
      const isWkt =
        innerName.startsWith('google.protobuf.') &&
        (typeof decoded !== 'object' ||
          decoded === null ||
          Array.isArray(decoded) ||
          WRAPPERS.has(innerName) ||
          innerName === 'google.protobuf.Struct');
      return isWkt ? { '@type': url, value: decoded } : { '@type': url, ...(decoded as Obj as { [k: string]: Json }) };
    }
  }
  if (WRAPPERS.has(name)) {
    const f = fieldOf(type, 1);
    return scalarToJson(f.type, m[f.name] ?? defaultScalar(f.type));
  }
  const out: { [k: string]: Json } = {};
  for (const field of type.fieldsArray) {
    const v = m[field.name];
    if (v === undefined || v === null) continue;
    if (field.map) {
      const entries = Object.keys(v);
      if (!entries.length) continue;
      const mo: { [k: string]: Json } = {};
      for (const k of entries.sort()) mo[k] = singleToJson(field, (v as Obj)[k]);
      out[field.name] = mo;
    } else if (field.repeated) {
      if (!(v as unknown[]).length) continue;
      out[field.name] = (v as unknown[]).map((x) => singleToJson(field, x));
    } else {
      // Decoded messages carry set fields as own properties (defaults live on the prototype).
      if (!hasOwn(m, field.name)) continue;
      // proto3: default scalars are omitted unless the field tracks presence (oneof member / optional)
      const tracksPresence = Boolean(field.partOf) || Boolean(field.options?.proto3_optional);
      if (!tracksPresence && !field.resolvedType && isDefaultScalar(field.type, v)) continue;
      if (!tracksPresence && field.resolvedType instanceof protobuf.Enum && Number(v) === 0) continue;
      out[field.name] = singleToJson(field, v);
    }
  }
  return out;
}

function hasOwn(o: object, k: string): boolean {
  return Object.hasOwn(o, k) && (o as Obj)[k] !== undefined && (o as Obj)[k] !== null;
}

/** protobufjs decodes 64-bit integers as Long objects when `long` is installed. */
function toNum(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'object' && typeof (v as { toNumber?: () => number }).toNumber === 'function')
    return (v as { toNumber: () => number }).toNumber();
  return Number(v);
}

function singleToJson(field: protobuf.Field, v: unknown): Json {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return messageToJson(rt, v as Obj);
  if (rt instanceof protobuf.Enum) return rt.valuesById[Number(v)] ?? Number(v);
  return scalarToJson(field.type, v);
}

function defaultScalar(type: string): unknown {
  if (type === 'string') return '';
  if (type === 'bool') return false;
  if (type === 'bytes') return new Uint8Array();
  return 0;
}

function isDefaultScalar(type: string, v: unknown): boolean {
  if (type === 'string') return v === '';
  if (type === 'bool') return v === false;
  if (type === 'bytes') return (v as Uint8Array).length === 0;
  return toNum(v) === 0;
}

function scalarToJson(type: string, v: unknown): Json {
  switch (type) {
    case 'string':
    case 'bool':
      return v as Json;
    case 'bytes':
      return Buffer.from(v as Uint8Array).toString('base64');
    case 'double':
    case 'float':
      return Number.isFinite(v) ? (v as number) : String(v);
    case 'int64':
    case 'uint64':
    case 'sint64':
    case 'fixed64':
    case 'sfixed64':
      return String(v);
    default:
      return Number(v);
  }
}

/** RFC 3339 as proto3 JSON takes it: a date, `T`, a time with up to 9 fraction digits, `Z` or an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
/** Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z. */
const MIN_SECONDS = -62_135_596_800;
const MAX_SECONDS = 253_402_300_799;

/** Seconds since the epoch and non-negative nanoseconds, or undefined when `text` is not RFC 3339. */
export function parseTimestamp(text: string): { seconds: number; nanos: number } | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return undefined;
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d);
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return undefined;
  let seconds = Math.floor(day.getTime() / 86_400_000) * 86_400 + h * 3600 + mi * 60 + s;
  if (m[9]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    seconds -= (m[9] === '-' ? -1 : 1) * (oh * 3600 + om * 60);
  }
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) return undefined;
  return { seconds, nanos: m[7] ? Number(m[7].padEnd(9, '0')) : 0 };
}

/** A Timestamp as proto3 JSON: UTC, `Z`, with 0, 3, 6 or 9 fraction digits as protobuf prints it. */
export function timestampJson(seconds: number, nanos: number): string {
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  if (!nanos) return `${base}Z`;
  const digits = String(nanos).padStart(9, '0');
  const fraction = nanos % 1_000_000 === 0 ? digits.slice(0, 3) : nanos % 1000 === 0 ? digits.slice(0, 6) : digits;
  return `${base}.${fraction}Z`;
}
