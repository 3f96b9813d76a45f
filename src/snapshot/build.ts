/**
 * The last validation step and the snapshot build are one pass: every node group's resources are
 * translated and encoded with the real Envoy protos (strict proto3 JSON + protoc-gen-validate
 * rules). A problem there is reported against the operator document that produced the resource;
 * only a build without errors yields snapshots.
 */
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { DiagnosticSink } from '../model/diagnostic-sink.ts';
import { NodeGroupResolver } from '../model/node-groups.ts';
import { groupNames, type Model } from '../model/types.ts';
import { translateGroup } from '../translate/index.ts';
import type { SecretMaterial } from '../source/secrets.ts';
import type { EncodedResource, ResourceEncoder } from './encoder.ts';
import { makeGroupSnapshot, type GroupSnapshot } from './group-snapshot.ts';

const ENVOY_NAMES = {
  cluster: 'Cluster',
  endpoint: 'ClusterLoadAssignment',
  listener: 'Listener',
  route: 'RouteConfiguration',
  secret: 'Secret',
} as const;

/** Which operator document a resource comes from (`Kind/name`), to report problems found later. */
export interface ResourceOrigin {
  origin: string;
  virtualHostOrigins?: string[];
}

export interface BuiltConfig {
  groups: Map<string, GroupSnapshot>;
  resolver: NodeGroupResolver;
  /** By `kind/name` of the Envoy resource (the same in every group). */
  origins?: Map<string, ResourceOrigin>;
}

export interface BuildResult {
  config?: BuiltConfig;
  diagnostics: Diagnostic[];
}

export function buildConfig(
  model: Model,
  encoder: ResourceEncoder,
  textOf: (file: string) => string | undefined = () => undefined,
  secrets: ReadonlyMap<string, SecretMaterial> = new Map(),
  previous?: ReadonlyMap<string, GroupSnapshot>,
): BuildResult {
  const sink = new DiagnosticSink(textOf);
  const groups = new Map<string, GroupSnapshot>();
  const reported = new Set<EncodedResource>();
  const origins = new Map<string, ResourceOrigin>();
  for (const group of groupNames(model)) {
    const encoded: EncodedResource[] = [];
    for (const t of translateGroup(model, group, secrets)) {
      const r = encoder.encode(t.kind, t.name, t.json);
      if (r.issues.length && !reported.has(r)) {
        reported.add(r);
        for (const issue of r.issues) {
          // Blame the virtual host for problems inside its part of a route configuration.
          const vh = /^virtual_hosts\[(\d+)\]/.exec(issue.path);
          const originKey = (vh && t.virtualHostOrigins?.[Number(vh[1])]) || t.origin;
          const [kind = '', name = ''] = originKey.split('/');
          const origin = model.origins[originKey];
          sink.error(
            Codes.ENVOY_RESOURCE,
            origin ? { origin, kind, name } : undefined,
            [],
            `produces an invalid Envoy ${ENVOY_NAMES[t.kind]} "${t.name}": ${issue.path || '(root)'}: ${issue.message}`,
          );
        }
      }
      encoded.push(r);
      origins.set(`${t.kind}/${t.name}`, { origin: t.origin, virtualHostOrigins: t.virtualHostOrigins });
    }
    groups.set(group, makeGroupSnapshot(group, encoded, previous?.get(group)));
  }
  encoder.finishBuild();
  if (sink.diagnostics.length) return { diagnostics: sink.diagnostics };
  return { config: { groups, resolver: NodeGroupResolver.forModel(model), origins }, diagnostics: [] };
}
