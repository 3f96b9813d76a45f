import type { Diagnostic } from '../shared/diagnostics.ts';
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
export async function checkTree(dir: string, encoder = new ResourceEncoder(), opts: { unlessTreeHash?: string } = {}): Promise<TreeCheck & { unchanged?: true }> {
  const source = await readTree(dir, undefined, opts);
  if (source.unchanged) return { treeHash: source.treeHash, diagnostics: [], unchanged: true };
  const validated = validateSourceSet(source);
  if (!validated.model) return { treeHash: source.treeHash, diagnostics: validated.diagnostics };
  const texts = new Map(source.files.map((f) => [f.file, f.text]));
  const built = buildConfig(validated.model, encoder, (f) => texts.get(f));
  return { model: validated.model, config: built.config, treeHash: source.treeHash, diagnostics: [...validated.diagnostics, ...built.diagnostics] };
}

