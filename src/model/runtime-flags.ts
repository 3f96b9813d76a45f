/**
 * Runtime feature flags in Runtime documents (`envoy.reloadable_features.*`,
 * `envoy.restart_features.*`), checked against what Envoy releases know (read from their binaries:
 * envoy-runtime-flags.ts): against every release fleetxds has read when a tree is checked, and
 * against the releases the connected proxies of each node group run when it is applied. Other
 * runtime keys are read by the components that define them, which no list names: they are not
 * checked.
 */
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { DiagnosticSink, type DocRef } from './diagnostic-sink.ts';
import { ENVOY_RELEASES_READ, ENVOY_RUNTIME_FLAGS } from './envoy-runtime-flags.ts';
import { releaseList } from './grpc-compat.ts';
import type { RuntimeDoc } from './schema.ts';
import { listenerGroups, originOf, type Model } from './types.ts';

/** By group: the Envoy releases (major.minor) its connected proxies run, with how many each. */
export type EnvoyReleases = ReadonlyMap<string, readonly { readonly release: string; readonly nodes: number }[]>;

const FLAG = /^envoy\.(reloadable|restart)_features\./;
const RESTART = 'envoy.restart_features.';

const READ = ENVOY_RELEASES_READ;

/** Whether Envoy `release` (major.minor) knows `key`; undefined when fleetxds has not read that release. */
export function releaseKnows(release: string, key: string): boolean | undefined {
  if (!READ.includes(release)) return undefined;
  return Object.hasOwn(ENVOY_RUNTIME_FLAGS, key) && ENVOY_RUNTIME_FLAGS[key]!.includes(release);
}

/** `major.minor` of an Envoy's user agent (`envoy/1.40.0`); undefined for anything else. */
export function envoyReleaseOf(userAgent: string): string | undefined {
  return /^envoy\/(\d+\.\d+)\.\d+/.exec(userAgent)?.[1];
}

function flagsOf(rt: RuntimeDoc): string[] {
  return Object.keys(rt.values).filter((k) => FLAG.test(k));
}

/**
 * What a tree alone tells: a flag no release fleetxds has read knows (misspelt, or long removed),
 * and restart flags, which Envoy reads when it starts, before any runtime layer arrives.
 */
export function runtimeFlagWarnings(rt: RuntimeDoc, warn: (key: string, message: string) => void): void {
  for (const key of flagsOf(rt)) {
    if (key.startsWith(RESTART))
      warn(key, `"${key}" is read when Envoy starts, before runtime layers arrive: set it in the bootstrap instead`);
    else if (!Object.hasOwn(ENVOY_RUNTIME_FLAGS, key))
      warn(key, `no Envoy release from ${READ[0]} to ${READ.at(-1)} knows the runtime flag "${key}": it has no effect`);
  }
}

/**
 * Warnings, at the key's file:line, for reloadable flags some connected Envoys of the document's
 * groups do not know (they ignore them), or run a release fleetxds has not read.
 */
export function runtimeFleetWarnings(
  model: Model,
  envoys: EnvoyReleases,
  textOf: (file: string) => string | undefined,
): Diagnostic[] {
  const sink = new DiagnosticSink(textOf);
  if (!envoys.size) return sink.diagnostics;
  for (const rt of model.runtimes ?? []) {
    const origin = originOf(rt);
    const ref: DocRef | undefined = origin && { origin, kind: 'Runtime', name: rt.name };
    for (const key of flagsOf(rt)) {
      if (key.startsWith(RESTART)) continue;
      for (const group of listenerGroups(rt)) {
        const lacking: [string, number][] = [];
        const unread: [string, number][] = [];
        for (const { release, nodes } of envoys.get(group) ?? []) {
          const knows = releaseKnows(release, key);
          if (knows === false) lacking.push([`Envoy ${release}`, nodes]);
          else if (knows === undefined) unread.push([`Envoy ${release}`, nodes]);
        }
        if (lacking.length)
          sink.warn(
            Codes.CLIENT_COMPAT,
            ref,
            ['values', key],
            `node group "${group}" has proxies whose release does not know the runtime flag "${key}" and ` +
              `ignores it: ${releaseList(lacking)}`,
          );
        if (unread.length)
          sink.warn(
            Codes.CLIENT_COMPAT,
            ref,
            ['values', key],
            `fleetxds cannot tell whether the runtime flag "${key}" is known to ${releaseList(unread)} of node group ` +
              `"${group}" (it has read Envoy ${READ.join(', ')})`,
          );
      }
    }
  }
  return sink.diagnostics;
}
