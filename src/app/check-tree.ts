import { hasErrors, type Diagnostic } from '../shared/diagnostics.ts';
import { resolve } from 'node:path';
import { loadSecrets, type SecretMaterial } from '../source/secrets.ts';
import { originKey } from '../model/types.ts';
import { readTree } from '../source/read-tree.ts';
import { validateSourceSet } from '../model/validate.ts';
import { buildConfig, type BuiltConfig } from '../snapshot/build.ts';
import { ResourceEncoder } from '../snapshot/encoder.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import type { Model } from '../model/types.ts';
import type { EnvoyChecker } from './envoy-check.ts';
import { removalDiagnostics } from './removal-guard.ts';

export interface TreeCheck {
  model?: Model;
  /** TLS material of the model's secrets (never persisted). */
  secrets?: Map<string, SecretMaterial>;
  config?: BuiltConfig;
  treeHash: string;
  diagnostics: Diagnostic[];
}

/** Read, validate and build a tree offline: exactly what the server does before it applies one. */
export async function checkTree(
  dir: string,
  encoder = new ResourceEncoder(),
  opts: {
    unlessTreeHash?: string | (string | undefined)[];
    /** The served groups: unchanged resources keep their snapshots. */
    previous?: ReadonlyMap<string, GroupSnapshot>;
    /** What mass removals are measured against (the served config, or another tree); none = only the empty-tree rule. */
    against?: ReadonlyMap<string, GroupSnapshot>;
    envoy?: EnvoyChecker;
  } = {},
): Promise<TreeCheck & { unchanged?: true }> {
  const source = await readTree(dir, undefined, opts);
  if (source.unchanged) return { treeHash: source.treeHash, diagnostics: [], unchanged: true };
  const validated = validateSourceSet(source);
  if (!validated.model) return { treeHash: source.treeHash, diagnostics: validated.diagnostics };
  const model = validated.model;
  const secrets = await loadSecrets(model.secrets, resolve(dir), (name) => model.origins[originKey('Secret', name)]);
  const diagnostics = [...validated.diagnostics, ...secrets.diagnostics];
  if (hasErrors(secrets.diagnostics)) return { treeHash: source.treeHash, diagnostics };
  const texts = new Map(source.files.map((f) => [f.file, f.text]));
  const textOf = (f: string) => texts.get(f);
  const built = buildConfig(model, encoder, textOf, secrets.materials, opts.previous);
  const guarded = built.config ? removalDiagnostics(model, built.config.groups, opts.against, textOf) : [];
  if (guarded.length) return { model, treeHash: source.treeHash, diagnostics: [...diagnostics, ...built.diagnostics, ...guarded] };
  const all = [...diagnostics, ...built.diagnostics];
  // Envoy, when configured, judges last: what it rejects blocks the tree like any other error.
  const judged = built.config && opts.envoy ? await opts.envoy.check(model, built.config, textOf) : [];
  if (judged.length) return { model, treeHash: source.treeHash, diagnostics: [...all, ...judged] };
  return { model, secrets: secrets.materials, config: built.config, treeHash: source.treeHash, diagnostics: all };
}

