import { formatDiagnostic, hasErrors, type Diagnostic } from '../shared/diagnostics.ts';
import { readTree } from '../source/read-tree.ts';
import { validateSourceSet } from '../model/validate.ts';
import { buildConfig, type BuiltConfig } from '../snapshot/build.ts';
import { ResourceEncoder } from '../snapshot/encoder.ts';
import type { Model } from '../model/types.ts';

export interface TreeCheck {
  model?: Model;
  config?: BuiltConfig;
  treeHash: string;
  diagnostics: Diagnostic[];
}

/** Read, validate and build a tree offline: exactly what the server does before it applies one. */
export async function checkTree(dir: string, encoder = new ResourceEncoder()): Promise<TreeCheck> {
  const source = await readTree(dir);
  const validated = validateSourceSet(source);
  if (!validated.model) return { treeHash: source.treeHash, diagnostics: validated.diagnostics };
  const texts = new Map(source.files.map((f) => [f.file, f.text]));
  const built = buildConfig(validated.model, encoder, (f) => texts.get(f));
  return { model: validated.model, config: built.config, treeHash: source.treeHash, diagnostics: [...validated.diagnostics, ...built.diagnostics] };
}

/** `fleetxds validate <dir>`: prints every problem, exits 1 on any error (usable in a pre-receive hook). */
export async function validateCommand(dir: string, opts: { json?: boolean }): Promise<number> {
  const result = await checkTree(dir);
  const failed = hasErrors(result.diagnostics) || !result.config;
  if (opts.json) {
    process.stdout.write(JSON.stringify({ ok: !failed, diagnostics: result.diagnostics }, null, 2) + '\n');
  } else {
    for (const d of result.diagnostics) process.stderr.write(formatDiagnostic(d) + '\n');
    const errors = result.diagnostics.filter((d) => d.severity === 'error').length;
    const warnings = result.diagnostics.length - errors;
    if (failed) process.stderr.write(`${dir}: invalid (${errors} error(s), ${warnings} warning(s))\n`);
    else {
      const groups = [...result.config!.groups.values()];
      const counts = groups.map((g) => `${g.group}: ${Object.values(g.types).reduce((a, t) => a + t.resources.size, 0)} resources`).join(', ');
      process.stdout.write(`${dir}: valid${warnings ? ` (${warnings} warning(s))` : ''}; ${counts}\n`);
    }
  }
  return failed ? 1 : 0;
}
