/**
 * The last validation step and the snapshot build are one pass: every node group's resources are
 * translated and encoded with the real Envoy protos (strict proto3 JSON + protoc-gen-validate
 * rules). A problem there is reported against the operator document that produced the resource;
 * only a build without errors yields snapshots.
 */
import { findByName } from '../shared/sorted-lists.ts';
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { DiagnosticSink } from '../model/diagnostic-sink.ts';
import { NodeGroupResolver } from '../model/node-groups.ts';
import { groupNames, originIn, type Model } from '../model/types.ts';
import { translateGroup, translateSecret, type TranslatedResource } from '../translate/index.ts';
import { patchGroup, type PatchedGroup } from '../translate/patches.ts';
import type { SecretMaterial } from '../model/types.ts';
import { ResourceEncoder, type EncodedList, type EncodedResource } from './encoder.ts';
import { TranslationMemo } from '../translate/memo.ts';
import { makeGroupSnapshot, type GroupSnapshot } from './group-snapshot.ts';
import { failoverAssignments } from './locality.ts';
import { RESOURCE_KINDS, ResourceTypes, type ResourceKind } from '../xds/resource-types.ts';

/** Which operator document a resource comes from (`Kind/name`), to report problems found later. */
export interface ResourceOrigin {
  origin: string;
  virtualHostOrigins?: string[];
}

export interface BuiltConfig {
  groups: Map<string, GroupSnapshot>;
  resolver: NodeGroupResolver;
  /** By `kind/name` of the Envoy resource (the same in every group). */
  readonly origins?: Map<string, ResourceOrigin>;
  /** By group: the resources (`kind/name`) EnvoyPatch documents changed, and which, in order. */
  readonly patchedBy?: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;
}

export interface BuildResult {
  config?: BuiltConfig;
  diagnostics: Diagnostic[];
}

/** What a build reuses from earlier builds of the same pipeline. */
export interface BuildCaches {
  readonly encoder: ResourceEncoder;
  readonly memo: TranslationMemo;
}

export function freshBuildCaches(): BuildCaches {
  return { encoder: new ResourceEncoder(), memo: new TranslationMemo() };
}

export function buildConfig(
  model: Model,
  { encoder, memo }: BuildCaches = freshBuildCaches(),
  textOf: (file: string) => string | undefined = () => undefined,
  secrets: ReadonlyMap<string, SecretMaterial> = new Map(),
  previous?: ReadonlyMap<string, GroupSnapshot>,
): BuildResult {
  const sink = new DiagnosticSink(textOf);
  const groups = new Map<string, GroupSnapshot>();
  const reported = new Set<EncodedResource>();
  const matched = new Set<string>();
  const patchedBy = new Map<string, ReadonlyMap<string, readonly string[]>>();
  const failoverNames = failoverServices(model);
  for (const group of groupNames(model)) {
    const patched = patchedGroup(model, group, secrets, memo);
    reportPatchProblems(sink, model, patched);
    for (const n of patched.matched) matched.add(n);
    if (patched.changedBy.size) patchedBy.set(group, patched.changedBy);
    const translated = patched.resources;
    const encoded = {} as Record<ResourceKind, EncodedList>;
    for (const kind of RESOURCE_KINDS) {
      const list = (encoded[kind] = encoder.encodeList(translated[kind]));
      if (!list.issues) continue;
      list.forEach((r, i) => {
        // A resource shared by several groups is reported once.
        if (r.issues.length && !reported.has(r)) {
          reported.add(r);
          reportIssues(sink, model, translated[kind][i]!, r);
        }
      });
    }
    const snapshot = makeGroupSnapshot(group, encoded, previous?.get(group));
    // The group's own workload is its local cluster's assignment: the same for every caller (validation
    // refuses a group that also calls its workload with failover).
    const workload = findByName(model.nodeGroups, group)?.workload;
    const failover = failoverNames.length
      ? failoverAssignments(
          snapshot.types.endpoint,
          failoverNames.filter((n) => n !== workload),
          encoder,
        )
      : undefined;
    groups.set(group, failover ? { ...snapshot, failover } : snapshot);
  }
  encoder.finishBuild();
  for (const p of model.envoyPatches ?? [])
    if (!matched.has(p.name)) {
      const origin = originIn(model, `EnvoyPatch/${p.name}`);
      sink.error(
        Codes.ENVOY_PATCH,
        origin && { origin, kind: 'EnvoyPatch', name: p.name },
        ['target'],
        `no ${p.target.kind} named "${p.target.name}" in ` +
          (p.groups ? `node groups ${p.groups.join(', ')}` : 'any node group'),
      );
    }
  if (sink.diagnostics.length) return { diagnostics: sink.diagnostics };
  let origins: Map<string, ResourceOrigin> | undefined;
  const config: BuiltConfig = {
    groups,
    resolver: NodeGroupResolver.forModel(model),
    patchedBy,
    // Only the Envoy check asks: translated again from the memo when it does, not kept by every build.
    get origins() {
      return (origins ??= originsOf(model, [...groups.keys()], secrets, memo));
    },
  };
  return { config, diagnostics: [] };
}

/** The services whose callers are served their endpoints by distance (src/features/locality). */
function failoverServices(model: Model): string[] {
  return model.services.filter((s) => s.locality?.failover && !s.dns).map((s) => s.name);
}

function originsOf(
  model: Model,
  groups: readonly string[],
  secrets: ReadonlyMap<string, SecretMaterial>,
  memo: TranslationMemo,
): Map<string, ResourceOrigin> {
  const origins = new Map<string, ResourceOrigin>();
  for (const group of groups)
    for (const list of Object.values(patchedGroup(model, group, secrets, memo).resources))
      for (const t of list)
        origins.set(`${t.kind}/${t.name}`, { origin: t.origin, virtualHostOrigins: t.virtualHostOrigins });
  return origins;
}

/** A group's resources, translated and patched (both memoized). */
function patchedGroup(
  model: Model,
  group: string,
  secrets: ReadonlyMap<string, SecretMaterial>,
  memo: TranslationMemo,
): PatchedGroup {
  return patchGroup(model, group, translateGroup(model, group, secrets, memo), memo);
}

/** Patches that fail on a group's resources, reported at the patch. A problem shared by groups is reported once. */
function reportPatchProblems(sink: DiagnosticSink, model: Model, patched: PatchedGroup): void {
  for (const p of patched.problems) {
    const origin = originIn(model, `EnvoyPatch/${p.patch}`);
    const ref = origin && { origin, kind: 'EnvoyPatch', name: p.patch };
    if (sink.diagnostics.some((d) => d.message === p.message && d.subject === `EnvoyPatch/${p.patch}`)) continue;
    sink.error(Codes.ENVOY_PATCH, ref, p.path, p.message);
  }
}

/**
 * The EnvoyPatch that set what is at `path` (the encoder's `a.b[0].c`) in a patched resource: the
 * last one whose changed paths contain it or lie inside it. Undefined when no patch set it.
 */
function patchAt(t: TranslatedResource, path: string): string | undefined {
  if (!t.patches) return undefined;
  const pointer = `/${path
    .replace(/\[(\d+)\]/g, '.$1')
    .replace(/\["([^"]*)"\]/g, '.$1')
    .split('.')
    .join('/')}`;
  const within = (a: string, b: string) => a === b || a.startsWith(`${b}/`);
  for (const p of [...t.patches].reverse())
    if (p.paths.some((x) => within(pointer, x) || within(x, pointer))) return `EnvoyPatch/${p.patch}`;
  return undefined;
}

/** Problems the encoder found in a resource, reported against the operator document it comes from. */
function reportIssues(sink: DiagnosticSink, model: Model, t: TranslatedResource, r: EncodedResource): void {
  for (const issue of r.issues) {
    // Blame the virtual host for problems inside its part of a route configuration.
    const vh = /^virtual_hosts\[(\d+)\]/.exec(issue.path);
    const originKey = patchAt(t, issue.path) ?? ((vh && t.virtualHostOrigins?.[Number(vh[1])]) || t.origin);
    const [kind = '', name = ''] = originKey.split('/');
    const origin = originIn(model, originKey);
    const what = `${ResourceTypes[t.kind].envoyName} "${t.name}"`;
    sink.error(
      Codes.ENVOY_RESOURCE,
      origin ? { origin, kind, name } : undefined,
      [],
      `produces an invalid Envoy ${what}: ${issue.path || '(root)'}: ${issue.message}`,
    );
  }
}

/**
 * The Secret resources of TLS material, with the builder and checks of a full build: what an
 * apply, a restart and a certificate rotation all serve secrets from.
 */
export function buildSecrets(
  model: Model,
  materials: ReadonlyMap<string, SecretMaterial>,
  { encoder, memo }: BuildCaches,
  textOf: (file: string) => string | undefined = () => undefined,
): { secrets?: Map<string, EncodedResource>; diagnostics: Diagnostic[] } {
  const sink = new DiagnosticSink(textOf);
  const secrets = new Map<string, EncodedResource>();
  for (const m of materials.values()) {
    const t = translateSecret(m, memo);
    const r = encoder.encode(t.kind, t.name, t.json);
    reportIssues(sink, model, t, r);
    secrets.set(m.name, r);
  }
  return sink.diagnostics.length ? { diagnostics: sink.diagnostics } : { secrets, diagnostics: [] };
}
