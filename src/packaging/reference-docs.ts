/**
 * The operator reference pages generated from the schemas the server validates with: the YAML
 * model (docs/reference/yaml.md, from the same TypeBox schema as config/schema/) and the server
 * settings (docs/reference/server-settings.md, from config/server-config.ts). `npm run docs`
 * writes them; test/packaging/reference-docs.test.ts fails when a committed page is stale.
 */
import { writeFileSync } from 'node:fs';
import { KINDS } from '../model/schema.ts';
import { FEATURES } from '../features/registry.ts';
import { ServerConfigSchema } from '../config/server-config.ts';
import { projectPath } from '../shared/paths.ts';
import { GRPC_CLIENT_KINDS, GRPC_CLIENT_NAMES, GRPC_FEATURES, type GrpcFeature } from '../model/grpc-compat.ts';

/** The JSON Schema subset TypeBox produces for our schemas (no $ref: every type is inlined). */
interface JsonSchema {
  type?: string;
  const?: unknown;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  patternProperties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
}

interface Row {
  path: string;
  type: string;
  required: boolean;
  notes: string;
}

const plain = (s: unknown): JsonSchema => JSON.parse(JSON.stringify(s)) as JsonSchema;

/** A short type name: `string`, `integer`, `"a" | "b"`, `list of object`, `map of string`. */
function typeName(s: JsonSchema): string {
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives) return [...new Set(alternatives.map(typeName))].join(' | ');
  if (s.type === 'array') return `list of ${s.items ? typeName(s.items) : 'any'}`;
  if (s.type === 'object' && !s.properties && s.patternProperties) {
    return `map of ${typeName(Object.values(s.patternProperties)[0]!)}`;
  }
  if (s.type === 'object' && !s.properties && typeof s.additionalProperties === 'object') {
    return `map of ${typeName(s.additionalProperties)}`;
  }
  return s.type ?? 'any';
}

/** Constraints worth a reader's eye; long patterns are left to the JSON Schema. */
function constraints(s: JsonSchema): string[] {
  const out: string[] = [];
  if (s.minimum !== undefined && s.maximum !== undefined) out.push(`${s.minimum}–${s.maximum}`);
  else if (s.minimum !== undefined) out.push(`≥ ${s.minimum}`);
  else if (s.maximum !== undefined) out.push(`≤ ${s.maximum}`);
  if (s.maxLength !== undefined) out.push(`at most ${s.maxLength} characters`);
  if (s.maxItems !== undefined) out.push(`at most ${s.maxItems} items`);
  if (s.minItems !== undefined && s.minItems > 0) out.push(`at least ${s.minItems} item${s.minItems > 1 ? 's' : ''}`);
  if (s.default !== undefined) out.push(`default \`${JSON.stringify(s.default)}\``);
  return out;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The object schemas among a field's alternatives (an object, a list of objects, or a union holding them). */
function nestedObjects(s: JsonSchema): JsonSchema[] {
  if (s.type === 'object' && s.properties) return [s];
  if (s.type === 'array' && s.items) return nestedObjects(s.items);
  if (s.type === 'object' && s.patternProperties) return Object.values(s.patternProperties).flatMap(nestedObjects);
  return (s.anyOf ?? s.oneOf ?? []).flatMap(nestedObjects);
}

function suffix(s: JsonSchema): string {
  if (s.type === 'array') return '[]';
  if (s.type === 'object' && s.patternProperties) return '.*';
  return '';
}

/** Every field of an object schema, depth first, with dotted paths (`[]` for list items, `.*` for map values). */
function rows(s: JsonSchema, prefix: string, out: Row[], seen: Set<string>): Row[] {
  const required = new Set(s.required ?? []);
  for (const [name, field] of Object.entries(s.properties ?? {})) {
    const path = `${prefix}${name}`;
    const notes = [field.description ?? '', ...constraints(field).map((c) => `(${c})`)].filter(Boolean).join(' ');
    // One row per path: two alternatives of a union that share a field describe it once.
    if (!seen.has(path)) {
      seen.add(path);
      out.push({ path, type: typeName(field), required: required.has(name), notes });
    }
    for (const nested of nestedObjects(field)) rows(nested, `${path}${suffix(field)}.`, out, seen);
  }
  return out;
}

function table(r: Row[]): string {
  const lines = ['| field | type | required | meaning |', '|---|---|---|---|'];
  for (const row of r) {
    lines.push(`| \`${row.path}\` | ${cell(row.type)} | ${row.required ? 'yes' : ''} | ${cell(row.notes)} |`);
  }
  return lines.join('\n');
}

const GENERATED = (source: string) =>
  `<!-- Generated from ${source} by \`npm run docs\`; edit the schema, not this page. -->`;

/** docs/reference/yaml.md: one table per document kind. */
export function modelReference(): string {
  const parts = [
    GENERATED('src/model/schema.ts'),
    '',
    '# YAML model reference',
    '',
    'Every document of the configuration tree has `kind` and `name`; unknown fields are errors. ' +
      'This page lists every field of every kind: the checks across documents (references, conflicts, what ' +
      'Envoy would refuse) are described in [configuration](../configuration.md). `a.b` is a field of the ' +
      'object `a`, `a[].b` a field of each item of the list `a`, `a.*.b` a field of each value of the map `a`.',
    '',
    'Kinds: ' +
      Object.keys(KINDS)
        .map((k) => `[${k}](#${k.toLowerCase()})`)
        .join(', ') +
      '.',
  ];
  for (const [kind, schema] of Object.entries(KINDS)) {
    const s = plain(schema);
    parts.push('', `## ${kind}`, '');
    if (s.description) parts.push(s.description, '');
    parts.push(table(rows(s, '', [], new Set())));
  }
  return `${parts.join('\n')}\n`;
}

/** docs/reference/server-settings.md: the settings file, field by field. */
export function settingsReference(): string {
  const parts = [
    GENERATED('src/config/server-config.ts'),
    '',
    '# Server settings reference',
    '',
    'The server reads one YAML file (`fleetxds serve --config FILE`; `config/fleetxds.yaml` in a checkout, ' +
      '`/etc/fleetxds/fleetxds.yaml` when installed). It is validated at start: an unknown or malformed ' +
      'setting stops the server with its path. Relative paths are relative to the file. ' +
      'See [operating](../operating.md) for how the settings are used together.',
    '',
    table(rows(plain(ServerConfigSchema), '', [], new Set())),
  ];
  return `${parts.join('\n')}\n`;
}

/** Every field of every kind as `Kind.path` (`a[].b` for list items, `a.*.b` for map values). */
export function modelFieldPaths(): string[] {
  return Object.entries(KINDS).flatMap(([kind, schema]) =>
    rows(plain(schema), '', [], new Set()).map((r) => `${kind}.${r.path}`),
  );
}

/** docs/reference/grpc-clients.md: which gRPC releases honour which setting (the table validation warns from). */
export function grpcClientsReference(): string {
  const rows = Object.values(GRPC_FEATURES).map((f: GrpcFeature) => [
    f.what,
    f.where,
    f.gRFC,
    ...GRPC_CLIENT_KINDS.map((k) => {
      const since = f.since[k];
      return since ? `${since}${f.env?.[k] ? ` with \`${f.env[k]}\`` : ''}` : '-';
    }),
    f.without === 'ignores' ? 'ignores it' : 'refuses (NACKs) it',
  ]);
  const head = ['setting', 'YAML', 'gRFC', ...GRPC_CLIENT_KINDS.map((k) => GRPC_CLIENT_NAMES[k]), 'an older release'];
  return (
    [
      GENERATED('src/model/grpc-compat.ts'),
      '',
      '# gRPC client support reference',
      '',
      'The first release of each gRPC implementation that honours a setting fleetxds sends gRPC applications, ' +
        "from gRPC's own list of xDS features (and, for grpc-js, the feature list of each @grpc/grpc-js-xds " +
        'release; gRPC C-core covers C++, Python, Ruby and PHP). A release without a setting ignores it silently, ' +
        "or refuses the resource that carries it. When a tree is applied, fleetxds warns at the setting's " +
        'file:line for each node group whose connected applications (by the user agent they report) would, ' +
        'naming their releases. See [proxyless gRPC](../grpc.md).',
      '',
      `| ${head.join(' | ')} |`,
      `|${head.map(() => '---').join('|')}|`,
      ...rows.map((r) => `| ${r.join(' | ')} |`),
      '',
      '## For Envoy only',
      '',
      'What no gRPC release takes from xDS, and why. fleetxds does not send it to gRPC applications, or they ' +
        'ignore it.',
      '',
      '| setting | why |',
      '|---|---|',
      ...envoyOnlyRows().map(([what, why]) => `| ${what} | ${why} |`),
    ].join('\n') + '\n'
  );
}

/** The features gRPC clients do not take, each with its reason: the registry's, then those outside it. */
function envoyOnlyRows(): [what: string, why: string][] {
  const features = FEATURES.flatMap((f): [string, string][] =>
    f.grpc.kind === 'envoy-only' ? [[`[${f.name}](../${f.docs})`, f.grpc.why]] : [],
  );
  return [
    ...features,
    [
      '[`Service.locality.zoneAware`](../locality.md#zone-aware-routing-envoy)',
      'zone-aware routing weighs zones by a local cluster, which gRPC clients do not have',
    ],
    ['[`Runtime`](../configuration.md#runtime-values)', 'gRPC clients have no runtime layer (no RTDS)'],
  ];
}

export const REFERENCE_PAGES: Readonly<Record<string, () => string>> = {
  'docs/reference/yaml.md': modelReference,
  'docs/reference/server-settings.md': settingsReference,
  'docs/reference/grpc-clients.md': grpcClientsReference,
};

if (import.meta.main) {
  for (const [file, render] of Object.entries(REFERENCE_PAGES)) writeFileSync(projectPath(file), render());
}
