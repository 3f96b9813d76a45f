/**
 * A google.protobuf.FileDescriptorSet of the protos the server loads, made from protobufjs's
 * reflection (the same definitions proto-json.ts encodes with): one file per package, in an order
 * where each file's types are defined before a file that refers to them, with fully qualified type
 * names. For comparing proto-json.ts with another protobuf library on the same definitions.
 */
import protobuf from 'protobufjs';

type Json = Record<string, unknown>;

const SCALAR: Record<string, number> = {
  double: 1,
  float: 2,
  int64: 3,
  uint64: 4,
  int32: 5,
  fixed64: 6,
  fixed32: 7,
  bool: 8,
  string: 9,
  bytes: 12,
  uint32: 13,
  sfixed32: 15,
  sfixed64: 16,
  sint32: 17,
  sint64: 18,
};
const TYPE_MESSAGE = 11;
const TYPE_ENUM = 14;

function pascal(name: string): string {
  return name.replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
}

function jsonName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function fieldType(f: protobuf.Field): { type: number; typeName?: string } {
  if (SCALAR[f.type] !== undefined) return { type: SCALAR[f.type]! };
  const t = f.resolve().resolvedType;
  if (t instanceof protobuf.Enum) return { type: TYPE_ENUM, typeName: `.${t.fullName.slice(1)}` };
  return { type: TYPE_MESSAGE, typeName: `.${t!.fullName.slice(1)}` };
}

function enumProto(e: protobuf.Enum): Json {
  return { name: e.name, value: Object.entries(e.values).map(([name, number]) => ({ name, number })) };
}

function messageProto(t: protobuf.Type, refs: Set<string>): Json {
  const nested: Json[] = [];
  const enums: Json[] = [];
  const oneofs = t.oneofsArray.filter(
    (o) => !(o.fieldsArray.length === 1 && o.fieldsArray[0]!.options?.proto3_optional),
  );
  const fields: Json[] = [];
  for (const f of t.fieldsArray) {
    // Extensions (PGV's rules on FieldOptions) are not fields of the message they extend.
    if (f.declaringField || f.extend !== undefined) continue;
    const base: Json = { name: f.name, number: f.id, jsonName: jsonName(f.name) };
    if (f instanceof protobuf.MapField) {
      const entry = `${pascal(f.name)}Entry`;
      const key = { name: 'key', number: 1, label: 1, jsonName: 'key', type: SCALAR[f.keyType]! };
      const value = { name: 'value', number: 2, label: 1, jsonName: 'value', ...fieldType(f) };
      if (value.typeName) refs.add(value.typeName);
      nested.push({ name: entry, field: [key, value], options: { mapEntry: true } });
      fields.push({ ...base, label: 3, type: TYPE_MESSAGE, typeName: `.${t.fullName.slice(1)}.${entry}` });
      continue;
    }
    const ft = fieldType(f);
    if (ft.typeName) refs.add(ft.typeName);
    const optional = f.options?.proto3_optional === true;
    const oneofIndex = f.partOf ? t.oneofsArray.indexOf(f.partOf) : -1;
    fields.push({
      ...base,
      label: f.repeated ? 3 : 1,
      ...ft,
      ...(oneofIndex >= 0 && { oneofIndex: optional ? t.oneofsArray.indexOf(f.partOf!) : oneofs.indexOf(f.partOf!) }),
      ...(optional && { proto3Optional: true }),
    });
  }
  for (const n of t.nestedArray) {
    if (n instanceof protobuf.Type) nested.push(messageProto(n, refs));
    else if (n instanceof protobuf.Enum) enums.push(enumProto(n));
  }
  return {
    name: t.name,
    field: fields,
    nestedType: nested,
    enumType: enums,
    oneofDecl: t.oneofsArray.map((o) => ({ name: o.name })),
  };
}

/** The set as JSON (google.protobuf.FileDescriptorSet in proto3 JSON), and the cycles it had to break. */
export function descriptorSet(root: protobuf.Root): { set: Json; cycles: string[] } {
  const files = new Map<string, { pkg: string; messageType: Json[]; enumType: Json[]; refs: Set<string> }>();
  const visit = (ns: protobuf.NamespaceBase): void => {
    for (const n of ns.nestedArray) {
      if (n instanceof protobuf.Type || n instanceof protobuf.Enum) {
        const pkg = ns.fullName.slice(1);
        let f = files.get(pkg);
        if (!f) files.set(pkg, (f = { pkg, messageType: [], enumType: [], refs: new Set() }));
        if (n instanceof protobuf.Type) f.messageType.push(messageProto(n, f.refs));
        else f.enumType.push(enumProto(n));
      } else if (n instanceof protobuf.Namespace && !(n instanceof protobuf.Service)) visit(n);
    }
  };
  visit(root);
  const packageOf = (typeName: string): string | undefined => {
    let best: string | undefined;
    for (const pkg of files.keys())
      if (typeName.startsWith(`.${pkg}.`) && (!best || pkg.length > best.length)) best = pkg;
    return best;
  };
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const cycles: string[] = [];
  const place = (pkg: string, path: string[]): void => {
    if (state.get(pkg) === 'done') return;
    if (state.get(pkg) === 'visiting') {
      cycles.push([...path, pkg].join(' -> '));
      return;
    }
    state.set(pkg, 'visiting');
    for (const r of files.get(pkg)!.refs) {
      const dep = packageOf(r);
      if (dep && dep !== pkg) place(dep, [...path, pkg]);
    }
    state.set(pkg, 'done');
    order.push(pkg);
  };
  for (const pkg of files.keys()) place(pkg, []);
  const file = order.map((pkg) => {
    const f = files.get(pkg)!;
    const deps = [...new Set([...f.refs].map(packageOf).filter((d): d is string => !!d && d !== pkg))];
    return {
      name: `${pkg.replaceAll('.', '/')}/all.proto`,
      package: pkg,
      dependency: deps.map((d) => `${d.replaceAll('.', '/')}/all.proto`),
      messageType: f.messageType,
      enumType: f.enumType,
      syntax: 'proto3',
    };
  });
  return { set: { file }, cycles };
}
