/**
 * The compile stage: one call from a config tree to a candidate version. It reads the tree (only
 * what changed, through the caches), validates it, builds and encodes every Envoy resource per node
 * group and every Secret, guards against mass removals, lets real Envoy judge when configured, and
 * names the candidate by its model hash (and, when asked, the commit it came from). The server
 * applies a candidate; `fleetxds validate`, `render` and `bootstrap` stop at it.
 */
import { Codes, hasErrors, type Diagnostic } from '../shared/diagnostics.ts';
import { clientSupportWarnings } from '../model/grpc-compat.ts';
import type { ConnectedFleet } from '../model/fleet.ts';
import { runtimeFleetWarnings } from '../model/runtime-flags.ts';
import { localityFleetWarnings } from '../model/locality-checks.ts';
import { sha256Hex } from '../shared/hash.ts';
import { appendAll } from '../shared/arrays.ts';
import { resolve } from 'node:path';
import type { SecretMaterial } from '../model/types.ts';
import { loadSecrets } from '../source/secrets.ts';
import { originIn, originKey } from '../model/types.ts';
import { readTree } from '../source/read-tree.ts';
import { validateSourceSet } from '../model/validate.ts';
import { buildConfig, buildSecrets, type BuiltConfig } from '../snapshot/build.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import { modelHash } from '../model/files.ts';
import { resolveExpiry, type ExpiryResult } from '../model/expiry.ts';
import { provenanceOf, type SourceProvenance } from '../source/git-info.ts';
import { PipelineCaches } from './caches.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import type { Model } from '../model/types.ts';
import type { EnvoyChecker } from './envoy-check.ts';
import { removalDiagnostics } from './removal-guard.ts';

export interface TreeCheck {
  model?: Model;
  /** Set with `config`: the model's content hash, which names the version. */
  modelHash?: string;
  /** TLS material of the model's secrets (never persisted). */
  secrets?: Map<string, SecretMaterial>;
  /** Set with `config`: the model's Secret resources, encoded. */
  secretResources?: Map<string, EncodedResource>;
  config?: BuiltConfig;
  /** With `provenance`: the commit the tree is (a git checkout or a deployed release), if any. */
  provenance?: SourceProvenance;
  treeHash: string;
  diagnostics: Diagnostic[];
  /** The tree could not be read completely for a reason that passes (SourceSet.incomplete): not judged. */
  incomplete?: string;
  /** With `model`: its overrides served now and those past their deadline (left out of `model`). */
  expiry?: Pick<ExpiryResult, 'active' | 'expired'>;
}

/**
 * Problems reported per tree: the first ones, then a count (a generated file of 690,000 bad
 * documents must not become a 137 MB rejection row, log line and status response).
 */
export const MAX_DIAGNOSTICS = 200;

function capped(ds: Diagnostic[]): Diagnostic[] {
  if (ds.length <= MAX_DIAGNOSTICS) return ds;
  const errors = ds.filter((d) => d.severity === 'error').length;
  return [
    ...ds.slice(0, MAX_DIAGNOSTICS),
    {
      code: ds[MAX_DIAGNOSTICS]!.code,
      severity: errors > 0 ? 'error' : 'warning',
      message: `and ${ds.length - MAX_DIAGNOSTICS} more problems not shown (${errors} errors in all); fix these first`,
    },
  ];
}

/** Read, validate and build a tree offline: exactly what the server does before it applies one. */
export async function checkTree(
  dir: string,
  caches = new PipelineCaches(),
  opts: Parameters<typeof checkTreeUncapped>[2] = {},
): Promise<TreeCheck & { unchanged?: true }> {
  try {
    const r = await checkTreeUncapped(dir, caches, opts);
    return { ...r, diagnostics: capped(r.diagnostics) };
  } catch (err) {
    // A stage that fails on a tree refuses it with the reason, like any error: the operator sees it
    // in the rejection, `validate` prints it, and what is served stays.
    const message = `the tree could not be checked: ${(err as Error).message}`;
    return {
      treeHash: sha256Hex(`check failed\n${message}`),
      diagnostics: [{ code: Codes.CHECK_FAILED, severity: 'error', message }],
    };
  }
}

async function checkTreeUncapped(
  dir: string,
  caches: PipelineCaches,
  opts: {
    unlessTreeHash?: string | (string | undefined)[];
    /** The served groups: unchanged resources keep their snapshots. */
    previous?: ReadonlyMap<string, GroupSnapshot>;
    /**
     * What mass removals are measured against (the served config, or another tree); none = only the
     * empty-tree rule.
     */
    against?: ReadonlyMap<string, GroupSnapshot>;
    envoy?: EnvoyChecker;
    /**
     * The connected fleet: settings its gRPC releases would ignore or refuse, runtime flags its Envoy
     * releases do not know, and locality settings its nodes' localities leave without effect, are
     * warned about.
     */
    fleet?: () => ConnectedFleet;
    /** Look up which commit the tree is (while it is checked). */
    provenance?: boolean;
    /**
     * The time the tree is served at, and when each override already served started
     * (model/expiry.ts); default: now, and none (every past deadline is refused).
     */
    clock?: { now: number; started: ReadonlyMap<string, number> };
  } = {},
): Promise<TreeCheck & { unchanged?: true }> {
  const lookup = opts.provenance ? provenanceOf(dir) : undefined;
  const source = await readTree(dir, undefined, { unlessTreeHash: opts.unlessTreeHash, cache: caches.source });
  if (source.unchanged) return { treeHash: source.treeHash, diagnostics: [], unchanged: true };
  if (source.incomplete)
    return { treeHash: source.treeHash, diagnostics: source.diagnostics, incomplete: source.incomplete };
  const validated = validateSourceSet(source, caches.assembler, caches.checks);
  if (!validated.model) return { treeHash: source.treeHash, diagnostics: validated.diagnostics };
  const texts = new Map(source.files.map((f) => [f.file, f.text]));
  const textOf = (f: string) => texts.get(f);
  // What is served is the tree without the overrides past their deadline.
  const timed = resolveExpiry(validated.model, opts.clock ?? { now: Date.now(), started: new Map() }, textOf);
  if (hasErrors(timed.diagnostics))
    return { treeHash: source.treeHash, diagnostics: [...validated.diagnostics, ...timed.diagnostics] };
  const model = timed.model;
  const expiry = { active: timed.active, expired: timed.expired };
  const secrets = await loadSecrets(model.secrets, resolve(dir), (name) => originIn(model, originKey('Secret', name)));
  const diagnostics = [...validated.diagnostics, ...timed.diagnostics, ...secrets.diagnostics];
  if (hasErrors(secrets.diagnostics)) return { treeHash: source.treeHash, diagnostics };
  const built = buildConfig(model, caches, textOf, secrets.materials, opts.previous);
  const all = [...diagnostics, ...built.diagnostics];
  if (built.config && opts.fleet) {
    const fleet = opts.fleet();
    appendAll(all, clientSupportWarnings(model, fleet.grpc, textOf));
    appendAll(all, localityFleetWarnings(model, fleet, textOf));
    appendAll(all, runtimeFleetWarnings(model, fleet.envoy, textOf));
  }
  const guarded = built.config ? removalDiagnostics(model, built.config.groups, opts.against, textOf) : [];
  if (guarded.length) return { model, treeHash: source.treeHash, diagnostics: [...all, ...guarded] };
  // Envoy, when configured, judges last: what it rejects blocks the tree like any other error.
  const judged = built.config && opts.envoy ? await opts.envoy.check(model, built.config, textOf) : [];
  if (judged.length) return { model, treeHash: source.treeHash, diagnostics: [...all, ...judged] };
  if (!built.config) return { model, treeHash: source.treeHash, diagnostics: all };
  const encodedSecrets = buildSecrets(model, secrets.materials, caches);
  if (!encodedSecrets.secrets)
    return { model, treeHash: source.treeHash, diagnostics: [...all, ...encodedSecrets.diagnostics] };
  const provenance = await lookup;
  return {
    model,
    modelHash: modelHash(model),
    secrets: secrets.materials,
    secretResources: encodedSecrets.secrets,
    config: built.config,
    expiry,
    ...(provenance && { provenance }),
    treeHash: source.treeHash,
    diagnostics: all,
  };
}
