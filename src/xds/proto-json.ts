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
import { checkFieldRules, checkOneofRules, fieldRules, type ProtoIssue } from './pgv.ts';

export type { ProtoIssue } from './pgv.ts';

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

/** The well-known types with a JSON form of their own (wktFromJson). */
const WKT_NAMES = new Set([
  ...WRAPPERS,
  'google.protobuf.Duration',
  'google.protobuf.Timestamp',
  'google.protobuf.Empty',
  'google.protobuf.FieldMask',
  'google.protobuf.Struct',
  'google.protobuf.Value',
  'google.protobuf.ListValue',
  'google.protobuf.Any',
]);

/**
 * What converting JSON to a message of one type needs, worked out once per type: a cold build
 * converts tens of thousands of messages, and protobufjs computes a type's full name (walking its
 * parents) and its field lists on every access.
 */
interface TypeInfo {
  /** Full name without the leading dot. */
  readonly name: string;
  /** A well-known type with its own JSON form. */
  readonly wkt: boolean;
  readonly byJsonName: Map<string, protobuf.Field>;
  readonly oneofs: readonly protobuf.OneOf[];
  /** Fields with protoc-gen-validate rules, checked present or not. */
  readonly ruled: readonly {
    readonly field: protobuf.Field;
    readonly rules: NonNullable<ReturnType<typeof fieldRules>>;
  }[];
}
/**
 * Facts about the compiled-in Envoy protos (field tables), keyed by their protobufjs types: derived
 * from code, identical for every pipeline, so process-wide on purpose (not a cache of served data).
 */
const infoCache = new WeakMap<protobuf.Type, TypeInfo>();

function typeInfo(type: protobuf.Type): TypeInfo {
  let info = infoCache.get(type);
  if (!info) {
    const byJsonName = new Map<string, protobuf.Field>();
    const ruled: TypeInfo['ruled'][number][] = [];
    for (const f of type.fieldsArray) {
      byJsonName.set(f.name, f);
      byJsonName.set(lowerCamel(f.name), f);
      const rules = fieldRules(f);
      if (rules) ruled.push({ field: f, rules });
    }
    const name = type.fullName.replace(/^\./, '');
    info = { name, wkt: WKT_NAMES.has(name), byJsonName, oneofs: type.oneofsArray, ruled };
    infoCache.set(type, info);
  }
  return info;
}

function lowerCamel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function fullName(type: protobuf.Type): string {
  return typeInfo(type).name;
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

// ------------------------------------------------------------------------------------------------
// JSON -> object protobufjs's encoder takes (encodeObject)

export function jsonToObject(type: protobuf.Type, json: unknown, path: string, issues: ProtoIssue[]): Obj {
  const info = typeInfo(type);
  if (info.wkt) return wktFromJson(info.name, type, json, path, issues) as Obj;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    issues.push({ path, message: `expected an object for ${info.name}, got ${describe(json)}` });
    return {};
  }
  const out: Obj = {};
  // Which fields are set matters only to oneofs and validation rules; most types have neither.
  const present = info.oneofs.length || info.ruled.length ? new Map<protobuf.Field, unknown>() : undefined;
  for (const key in json) {
    const value = (json as Obj)[key];
    const field = info.byJsonName.get(key);
    const fpath = path ? `${path}.${key}` : key;
    if (!field) {
      issues.push({ path: fpath, message: `unknown field "${key}" in ${info.name}` });
      continue;
    }
    if (value === null && fullNameOfField(field) !== 'google.protobuf.Value') continue;
    present?.set(field, value);
    out[field.name] = convertField(field, value, fpath, issues);
  }
  if (!present) return out;
  for (const oneof of info.oneofs) {
    const set = oneof.fieldsArray.filter((f) => present.has(f));
    if (set.length > 1) {
      issues.push({
        path,
        message:
          `only one of ${oneof.fieldsArray.map((f) => f.name).join(', ')} may be set (oneof ` +
          `${oneof.name}); got ${set.map((f) => f.name).join(', ')}`,
      });
    }
    checkOneofRules(oneof, set.length, path, issues);
  }
  for (const { field, rules } of info.ruled)
    checkFieldRules(field, rules, present.get(field), path ? `${path}.${field.name}` : field.name, issues);
  return out;
}

function fullNameOfField(field: protobuf.Field): string | undefined {
  const rt = field.resolvedType;
  return rt instanceof protobuf.Type ? fullName(rt) : undefined;
}

function convertField(field: protobuf.Field, value: unknown, path: string, issues: ProtoIssue[]): unknown {
  if (field.map) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      issues.push({ path, message: `expected an object (map), got ${describe(value)}` });
      return {};
    }
    const out: Obj = {};
    for (const [k, v] of Object.entries(value as Obj))
      out[k] = convertSingle(field, v, `${path}[${JSON.stringify(k)}]`, issues);
    return out;
  }
  if (field.repeated) {
    if (!Array.isArray(value)) {
      issues.push({ path, message: `expected an array, got ${describe(value)}` });
      return [];
    }
    return value.map((v, i) => convertSingle(field, v, `${path}[${i}]`, issues));
  }
  return convertSingle(field, value, path, issues);
}

function convertSingle(field: protobuf.Field, value: unknown, path: string, issues: ProtoIssue[]): unknown {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Type) return jsonToObject(rt, value, path, issues);
  if (rt instanceof protobuf.Enum) return convertEnum(rt, value, path, issues);
  return convertScalar(field.type, value, path, issues);
}

function convertEnum(e: protobuf.Enum, value: unknown, path: string, issues: ProtoIssue[]): unknown {
  if (typeof value === 'string') {
    if (!(value in e.values)) {
      issues.push({
        path,
        message: `"${value}" is not a value of ${e.name} (one of ${Object.keys(e.values).join(', ')})`,
      });
      return 0;
    }
    return e.values[value];
  }
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  issues.push({ path, message: `expected an enum name of ${e.name}, got ${describe(value)}` });
  return 0;
}

const INT_RANGES: Record<string, [number, number]> = {
  int32: [-2147483648, 2147483647],
  sint32: [-2147483648, 2147483647],
  sfixed32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  fixed32: [0, 4294967295],
};

function convertScalar(type: string, value: unknown, path: string, issues: ProtoIssue[]): unknown {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') issues.push({ path, message: `expected a string, got ${describe(value)}` });
      return typeof value === 'string' ? value : '';
    case 'bool':
      if (typeof value !== 'boolean') issues.push({ path, message: `expected a boolean, got ${describe(value)}` });
      return value === true;
    case 'double':
    case 'float': {
      if (typeof value === 'number') return value;
      if (value === 'NaN' || value === 'Infinity' || value === '-Infinity') return Number(value);
      if (typeof value === 'string' && value.trim() !== '' && !Number.isNaN(Number(value))) return Number(value);
      issues.push({ path, message: `expected a number, got ${describe(value)}` });
      return 0;
    }
    case 'bytes':
      if (typeof value !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(value)) {
        issues.push({ path, message: 'expected base64 bytes' });
        return new Uint8Array();
      }
      return Buffer.from(value, 'base64');
    default: {
      // integer types
      const range = INT_RANGES[type];
      const isInt =
        (typeof value === 'number' && Number.isInteger(value)) ||
        (typeof value === 'string' && /^-?[0-9]+$/.test(value));
      if (!isInt) {
        issues.push({ path, message: `expected an integer (${type}), got ${describe(value)}` });
        return 0;
      }
      if (range) {
        const n = Number(value);
        if (n < range[0] || n > range[1]) issues.push({ path, message: `${value} is out of range for ${type}` });
        return n;
      }
      if ((type === 'uint64' || type === 'fixed64') && String(value).startsWith('-')) {
        issues.push({ path, message: `${value} is negative but ${type} is unsigned` });
      }
      return typeof value === 'number' ? value : value; // protobufjs accepts decimal strings for 64-bit
    }
  }
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

/** JSON of a well-known type (TypeInfo.wkt) to the object protobufjs takes. */
function wktFromJson(name: string, type: protobuf.Type, json: unknown, path: string, issues: ProtoIssue[]): unknown {
  switch (name) {
    case 'google.protobuf.Duration': {
      const m = typeof json === 'string' ? /^(-)?([0-9]+)(?:\.([0-9]{1,9}))?s$/.exec(json) : null;
      if (!m) {
        issues.push({ path, message: `expected a duration like "1.5s", got ${JSON.stringify(json)}` });
        return {};
      }
      const sign = m[1] ? -1 : 1;
      const seconds = Number(m[2]);
      const nanos = m[3] ? Number(m[3].padEnd(9, '0')) : 0;
      if (seconds > 315576000000) issues.push({ path, message: 'duration out of range' });
      return { [fieldById(type, 1)]: sign * seconds, [fieldById(type, 2)]: sign * nanos };
    }
    case 'google.protobuf.Timestamp': {
      const ms = typeof json === 'string' ? Date.parse(json) : NaN;
      if (Number.isNaN(ms)) {
        issues.push({ path, message: `expected an RFC 3339 timestamp, got ${JSON.stringify(json)}` });
        return {};
      }
      return { [fieldById(type, 1)]: Math.floor(ms / 1000), [fieldById(type, 2)]: (ms % 1000) * 1e6 };
    }
    case 'google.protobuf.Empty':
      if (json === null || typeof json !== 'object' || Array.isArray(json) || Object.keys(json).length) {
        issues.push({ path, message: 'expected {} for google.protobuf.Empty' });
      }
      return {};
    case 'google.protobuf.FieldMask':
      if (typeof json !== 'string') {
        issues.push({ path, message: 'expected a comma-separated field mask string' });
        return {};
      }
      return { [fieldById(type, 1)]: json === '' ? [] : json.split(',') };
    case 'google.protobuf.Struct':
      return structFromJson(type, json, path, issues);
    case 'google.protobuf.Value':
      return valueFromJson(type, json, path, issues);
    case 'google.protobuf.ListValue': {
      if (!Array.isArray(json)) {
        issues.push({ path, message: `expected an array, got ${describe(json)}` });
        return {};
      }
      const valueType = fieldOf(type, 1).resolvedType as protobuf.Type;
      return { [fieldById(type, 1)]: json.map((v, i) => valueFromJson(valueType, v, `${path}[${i}]`, issues)) };
    }
    case 'google.protobuf.Any':
      return anyFromJson(type, json, path, issues);
    default: {
      if (!WRAPPERS.has(name)) throw new Error(`${name} has no JSON form of its own`);
      const f = fieldOf(type, 1);
      return { [f.name]: convertScalar(f.type, json, path, issues) };
    }
  }
}

function structFromJson(type: protobuf.Type, json: unknown, path: string, issues: ProtoIssue[]): Obj {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    issues.push({ path, message: `expected an object (Struct), got ${describe(json)}` });
    return {};
  }
  const fieldsField = fieldOf(type, 1);
  const valueType = fieldsField.resolvedType as protobuf.Type;
  const fields: Obj = {};
  for (const [k, v] of Object.entries(json as Obj)) fields[k] = valueFromJson(valueType, v, `${path}.${k}`, issues);
  return { [fieldsField.name]: fields };
}

function valueFromJson(type: protobuf.Type, json: unknown, path: string, issues: ProtoIssue[]): Obj {
  // Field names come from reflection: protobufjs defines Struct/Value with camelCase names.
  if (json === null) return { [fieldById(type, 1)]: 0 };
  if (typeof json === 'number') return { [fieldById(type, 2)]: json };
  if (typeof json === 'string') return { [fieldById(type, 3)]: json };
  if (typeof json === 'boolean') return { [fieldById(type, 4)]: json };
  if (Array.isArray(json)) {
    const listType = fieldOf(type, 6).resolvedType as protobuf.Type;
    return { [fieldById(type, 6)]: wktFromJson('google.protobuf.ListValue', listType, json, path, issues) };
  }
  if (typeof json === 'object') {
    const structType = fieldOf(type, 5).resolvedType as protobuf.Type;
    return { [fieldById(type, 5)]: structFromJson(structType, json, path, issues) };
  }
  issues.push({ path, message: `unsupported JSON value ${describe(json)}` });
  return {};
}

function anyFromJson(type: protobuf.Type, json: unknown, path: string, issues: ProtoIssue[]): Obj {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    issues.push({ path, message: `expected an object with "@type", got ${describe(json)}` });
    return {};
  }
  const { '@type': typeUrl, ...rest } = json as Obj;
  if (typeof typeUrl !== 'string' || !typeUrl.includes('/')) {
    issues.push({ path, message: 'Any needs an "@type" like "type.googleapis.com/<message>"' });
    return {};
  }
  const inner = typeOfUrl(typeUrl);
  if (!inner) {
    issues.push({ path: `${path}.@type`, message: `unknown message type ${typeUrl}` });
    return {};
  }
  const obj = jsonToObject(inner, typeInfo(inner).wkt ? rest.value : rest, path, issues);
  const bytes = encodeObject(inner, obj);
  return { [fieldById(type, 1)]: typeUrl, [fieldById(type, 2)]: bytes };
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
  const obj = jsonToObject(type, json, '', issues);
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
  const name = fullName(type);
  const m = message as Obj;
  switch (name) {
    case 'google.protobuf.Duration': {
      const s = toNum(m[fieldById(type, 1)]);
      const n = toNum(m[fieldById(type, 2)]);
      const neg = s < 0 || n < 0;
      const frac = Math.abs(n) ? `.${String(Math.abs(n)).padStart(9, '0').replace(/0+$/, '')}` : '';
      return `${neg ? '-' : ''}${Math.abs(s)}${frac}s`;
    }
    case 'google.protobuf.Timestamp': {
      const s = toNum(m[fieldById(type, 1)]);
      const n = toNum(m[fieldById(type, 2)]);
      return new Date(s * 1000 + Math.floor(n / 1e6)).toISOString();
    }
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
      const url = String(m[fieldById(type, 1)] ?? '');
      const inner = typeOfUrl(url);
      const value = (m[fieldById(type, 2)] as Uint8Array) ?? new Uint8Array();
      if (!inner) return { '@type': url, value: Buffer.from(value).toString('base64') };
      const decoded = messageToJson(inner, inner.decode(value));
      const innerName = fullName(inner);
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
      const entries = Object.keys(v as Obj);
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
      return Number.isFinite(v as number) ? (v as number) : String(v);
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
