/**
 * The last validation step and the snapshot build are one pass: every node group's resources are
 * translated and encoded with the real Envoy protos (strict proto3 JSON + protoc-gen-validate
 * rules). A problem there is reported against the operator document that produced the resource;
 * only a build without errors yields snapshots.
 */
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { DiagnosticSink } from '../model/diagnostic-sink.ts';
import { NodeGroupResolver } from '../model/node-groups.ts';
import { groupNames, originIn, type Model } from '../model/types.ts';
import { translateGroup, translateSecret, type TranslatedResource } from '../translate/index.ts';
import type { SecretMaterial } from '../model/types.ts';
import { ResourceEncoder, type EncodedList, type EncodedResource } from './encoder.ts';
import { TranslationMemo } from '../translate/memo.ts';
import { makeGroupSnapshot, type GroupSnapshot } from './group-snapshot.ts';
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
  for (const group of groupNames(model)) {
    const translated = translateGroup(model, group, secrets, memo);
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
    groups.set(group, makeGroupSnapshot(group, encoded, previous?.get(group)));
  }
  encoder.finishBuild();
  if (sink.diagnostics.length) return { diagnostics: sink.diagnostics };
  let origins: Map<string, ResourceOrigin> | undefined;
  const config: BuiltConfig = {
    groups,
    resolver: NodeGroupResolver.forModel(model),
    // Only the Envoy check asks: translated again from the memo when it does, not kept by every build.
    get origins() {
      return (origins ??= originsOf(model, [...groups.keys()], secrets, memo));
    },
  };
  return { config, diagnostics: [] };
}

function originsOf(
  model: Model,
  groups: readonly string[],
  secrets: ReadonlyMap<string, SecretMaterial>,
  memo: TranslationMemo,
): Map<string, ResourceOrigin> {
  const origins = new Map<string, ResourceOrigin>();
  for (const group of groups)
    for (const list of Object.values(translateGroup(model, group, secrets, memo)))
      for (const t of list)
        origins.set(`${t.kind}/${t.name}`, { origin: t.origin, virtualHostOrigins: t.virtualHostOrigins });
  return origins;
}

/** Problems the encoder found in a resource, reported against the operator document it comes from. */
function reportIssues(sink: DiagnosticSink, model: Model, t: TranslatedResource, r: EncodedResource): void {
  for (const issue of r.issues) {
    // Blame the virtual host for problems inside its part of a route configuration.
    const vh = /^virtual_hosts\[(\d+)\]/.exec(issue.path);
    const originKey = (vh && t.virtualHostOrigins?.[Number(vh[1])]) || t.origin;
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
