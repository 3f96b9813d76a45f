import { checkTree } from '../compile/check-tree.ts';
import { formatDiagnostic } from '../shared/diagnostics.ts';
import { RESOURCE_KINDS, TypeUrls } from '../xds/resource-types.ts';

/**
 * Prints, per node group and type, the DiscoveryResponse-shaped JSON a tree produces, and under
 * `patched_by` the resources EnvoyPatch documents changed (`kind/name` -> the patches, in order).
 */
export async function renderCommand(dir: string, opts: { group?: string; kind?: string }): Promise<number> {
  const result = await checkTree(dir);
  if (!result.config) {
    for (const d of result.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    return 1;
  }
  if (opts.kind && !(RESOURCE_KINDS as readonly string[]).includes(opts.kind)) {
    process.stderr.write(`--kind must be one of ${RESOURCE_KINDS.join(', ')}\n`);
    return 2;
  }
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, g] of result.config.groups) {
    if (opts.group && name !== opts.group) continue;
    out[name] = {};
    for (const k of RESOURCE_KINDS) {
      if (opts.kind && k !== opts.kind) continue;
      const t = g.types[k];
      // Never print key material: secrets are shown by name and version only.
      const show = (r: { name: string; version: string; json: object }) =>
        k === 'secret' ? { name: r.name, version: r.version, material: '(redacted)' } : r.json;
      out[name][k] = {
        version_info: t.version,
        type_url: TypeUrls[k],
        resources: [...t.resources.values()].map((r) => ({ '@type': TypeUrls[k], ...show(r) })),
      };
    }
  }
  if (opts.group && !out[opts.group]) {
    process.stderr.write(`no node group "${opts.group}" (have: ${[...result.config.groups.keys()].join(', ')})\n`);
    return 2;
  }
  // Which EnvoyPatch documents changed which resources, in the order they applied.
  for (const [name, by] of result.config.patchedBy ?? []) {
    if (!out[name]) continue;
    const shown = [...by].filter(([key]) => !opts.kind || key.startsWith(`${opts.kind}/`));
    if (shown.length) out[name].patched_by = Object.fromEntries(shown);
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  return 0;
}
