/**
 * Which gRPC implementations honour which setting fleetxds sends gRPC applications, from gRPC's own
 * list of xDS features (grpc/grpc doc/grpc_xds_features.md) and, for Node, the feature list of the
 * @grpc/grpc-js-xds release. A gRPC client silently ignores a field it does not implement (and
 * refuses, NACKs, a value it does not support, such as an unknown load-balancing policy): the
 * connected applications' user agents say which release each node group runs, so a setting some
 * of them would ignore is warned at validation, at its file:line.
 */
import { Codes, type Diagnostic, type PathSegment } from '../shared/diagnostics.ts';
import { DiagnosticSink, type DocRef } from './diagnostic-sink.ts';
import type { ListenerDoc, RouteDoc, ServiceDoc, VirtualHostDoc } from './schema.ts';
import type { Feature } from '../features/kit/feature.ts';
import { FEATURES } from '../features/registry.ts';
import { connectedServices, docOf, listenerGroups, originOf, routeTargets, type Model } from './types.ts';

export const GRPC_CLIENT_KINDS = ['core', 'java', 'go', 'node'] as const;
export type GrpcClientKind = (typeof GRPC_CLIENT_KINDS)[number];

export const GRPC_CLIENT_NAMES: Readonly<Record<GrpcClientKind, string>> = {
  core: 'gRPC C-core',
  java: 'grpc-java',
  go: 'grpc-go',
  node: 'grpc-js',
};

export interface GrpcFeature {
  /** The YAML fields that use it. */
  where: string;
  gRFC: string;
  /** What the setting does, as the warning names it. */
  what: string;
  /** The first release of each implementation that honours it; a kind not listed has none. */
  since: Partial<Record<GrpcClientKind, string>>;
  /** An environment variable the application must set for it, per implementation. */
  env?: Partial<Record<GrpcClientKind, string>>;
  /** What a client without it does with the setting. */
  without: 'ignores' | 'refuses';
}

/** The settings fleetxds sends gRPC applications that not every gRPC release honours. */
export const GRPC_FEATURES = {
  timeout: {
    where: '`GrpcService.routes[].timeout`',
    gRFC: 'A31',
    what: 'route timeouts',
    since: { core: '1.37.1', java: '1.37.1', go: '1.37.0', node: '1.4.0' },
    without: 'ignores',
  },
  circuitBreaker: {
    where: '`Service.circuitBreaker.maxRequests` (the other limits: no gRPC release)',
    gRFC: 'A32',
    what: 'circuitBreaker.maxRequests',
    since: { core: '1.37.1', java: '1.37.1', go: '1.37.0', node: '1.4.0' },
    without: 'ignores',
  },
  fault: {
    where: '`GrpcService.routes[].fault`',
    gRFC: 'A33',
    what: 'fault injection',
    since: { core: '1.37.1', java: '1.37.1', go: '1.37.0', node: '1.4.0' },
    without: 'ignores',
  },
  logicalDns: {
    where: '`Service.dns` with `mode: logical`',
    gRFC: 'A37',
    what: 'services resolved by DNS in the client',
    since: { core: '1.47.0', java: '1.39.0', go: '1.52.2', node: '1.9.0' },
    without: 'refuses',
  },
  aggregate: {
    where: '`Service.aggregate`',
    gRFC: 'A37',
    what: 'aggregate services (failover across services)',
    since: { core: '1.47.0', java: '1.39.0', go: '1.52.2', node: '1.9.0' },
    without: 'refuses',
  },
  ringHash: {
    where: '`Service.lb: ring_hash`, `GrpcService.routes[].hashPolicy`',
    gRFC: 'A42',
    what: 'ring-hash balancing and hash policies',
    since: { core: '1.40.0', java: '1.40.1', go: '1.41.0', node: '1.10.0' },
    without: 'refuses',
  },
  retries: {
    where: '`GrpcService.routes[].retries`',
    gRFC: 'A44',
    what: 'retries',
    since: { core: '1.40.0', java: '1.40.1', go: '1.41.0', node: '1.8.0' },
    without: 'ignores',
  },
  outlierDetection: {
    where: '`Service.outlierDetection.successRate`, `.failurePercentage`',
    gRFC: 'A50',
    what: 'outlier detection',
    since: { core: '1.51.0', java: '1.49.0', go: '1.50.0', node: '1.7.0' },
    without: 'ignores',
  },
  headerStringMatch: {
    where: '`GrpcService.routes[].match.headers` (exact, prefix, regex)',
    gRFC: 'A63',
    what: 'header matches (exact, prefix, regex)',
    since: { core: '1.56.0', java: '1.53.0', go: '1.56.0', node: '1.9.0' },
    without: 'ignores',
  },
  tls: {
    where: '`Service.tls`, `GrpcServer.tls`',
    gRFC: 'A29',
    what: 'TLS from certificate providers',
    since: { core: '1.41.0', java: '1.41.0', go: '1.41.0', node: '1.13.0' },
    without: 'ignores',
  },
  rbac: {
    where: '`GrpcServer.access`',
    gRFC: 'A41',
    what: 'access rules',
    since: { core: '1.51.0', java: '1.42.0', go: '1.42.0', node: '1.14.0' },
    env: { node: 'GRPC_XDS_EXPERIMENTAL_RBAC=true' },
    without: 'refuses',
  },
  weightedByLoad: {
    where: '`Service.lb: weighted_by_load`',
    gRFC: 'A58',
    what: 'weighting by reported load (a release without it balances round robin)',
    since: { core: '1.55.0', java: '1.54.0', go: '1.56.0', node: '1.14.0' },
    env: { node: 'GRPC_EXPERIMENTAL_XDS_WRR_LB=true' },
    without: 'ignores',
  },
  leastRequest: {
    where: '`Service.lb: least_request`',
    gRFC: 'A48',
    // On by default from these; earlier grpc-java (from 1.48) and grpc-go releases need
    // GRPC_EXPERIMENTAL_ENABLE_LEAST_REQUEST=true.
    what: 'least-request balancing',
    since: { java: '1.73.0', go: '1.73.0' },
    without: 'refuses',
  },
} as const satisfies Record<string, GrpcFeature>;

export type GrpcFeatureName = keyof typeof GRPC_FEATURES;

/** A gRPC implementation and release from the user agent a node reports ("gRPC Go/1.85.0"). */
export function grpcClientOf(userAgent: string): { kind: GrpcClientKind; version: string } | undefined {
  const slash = userAgent.lastIndexOf('/');
  if (slash < 0) return undefined;
  const name = userAgent.slice(0, slash);
  const version = userAgent.slice(slash + 1).match(/^v?(\d+(?:\.\d+){0,2})/)?.[1];
  if (!version || !name.startsWith('gRPC ')) return undefined;
  const kind: GrpcClientKind | undefined = name.startsWith('gRPC Go')
    ? 'go'
    : name.startsWith('gRPC Java')
      ? 'java'
      : name.startsWith('gRPC Node')
        ? 'node'
        : /^gRPC (C-core|C\+\+|Python|Ruby|PHP|C#|Objective-C)/.test(name)
          ? 'core'
          : undefined;
  return kind && { kind, version };
}

function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** The first release of each implementation that honours a feature ("grpc-go 1.41.0"). */
export function supportedFrom(feature: GrpcFeature): string[] {
  return GRPC_CLIENT_KINDS.flatMap((k) => (feature.since[k] ? [`${GRPC_CLIENT_NAMES[k]} ${feature.since[k]}`] : []));
}

/** Whether a client release honours a feature (an environment variable may still be needed). */
export function honours(feature: GrpcFeature, kind: GrpcClientKind, version: string): boolean {
  const since = feature.since[kind];
  return since !== undefined && compareVersions(version, since) >= 0;
}

/** A place in the model that uses a feature for the gRPC applications of some node groups. */
export interface FeatureUse {
  feature: GrpcFeatureName;
  kind: string;
  name: string;
  path: PathSegment[];
  groups: readonly string[];
}

/** The features as validation reads them (the model's services fit every feature's rules). */
const REGISTERED: readonly Feature<ListenerDoc, VirtualHostDoc, RouteDoc, ServiceDoc>[] = FEATURES;
/** The features' rows of the table, each with when a service uses it (the feature's own rule). */
const FEATURE_ROWS = REGISTERED.flatMap((f) => (f.grpc.kind === 'grpc' ? f.grpc.rows : []));

function serviceUses(s: ServiceDoc, at: Omit<FeatureUse, 'feature'>): FeatureUse[] {
  const out: FeatureUse[] = [];
  const use = (feature: GrpcFeatureName) => out.push({ feature, ...at });
  if (s.aggregate) use('aggregate');
  if (s.dns?.mode === 'logical') use('logicalDns');
  for (const r of FEATURE_ROWS) if (r.uses(s)) use(r.row as GrpcFeatureName);
  if (s.tls) use('tls');
  return out;
}

/** Every use of a listed feature by the gRPC services and servers of the model. */
export function grpcFeatureUses(model: Model): FeatureUse[] {
  const out: FeatureUse[] = [];
  for (const g of model.grpcServices) {
    const groups = listenerGroups(g);
    const at = (path: PathSegment[]) => ({ kind: 'GrpcService', name: g.name, path, groups });
    g.routes.forEach((r, i) => {
      const path: PathSegment[] = ['routes', i];
      if (r.timeout) out.push({ feature: 'timeout', ...at([...path, 'timeout']) });
      if (r.retries) out.push({ feature: 'retries', ...at([...path, 'retries']) });
      if (r.fault) out.push({ feature: 'fault', ...at([...path, 'fault']) });
      if (r.hashPolicy) out.push({ feature: 'ringHash', ...at([...path, 'hashPolicy']) });
      if (r.match?.headers?.some((h) => h.present === undefined))
        out.push({ feature: 'headerStringMatch', ...at([...path, 'match', 'headers']) });
      for (const target of new Set(routeTargets(r))) {
        const s = docOf(model, 'Service', target) as ServiceDoc | undefined;
        // An aggregate is a setting itself, and its members are what the clients connect to.
        if (s?.aggregate) out.push(...serviceUses(s, at(path)));
        for (const m of s ? connectedServices(model, s) : []) out.push(...serviceUses(m, at(path)));
      }
    });
  }
  for (const s of model.grpcServers ?? []) {
    const groups = listenerGroups(s);
    if (s.tls) out.push({ feature: 'tls', kind: 'GrpcServer', name: s.name, path: ['tls'], groups });
    if (s.access) out.push({ feature: 'rbac', kind: 'GrpcServer', name: s.name, path: ['access'], groups });
  }
  return out;
}

/** A gRPC release connected to a node group, and how many of its nodes run it. */
export interface ConnectedRelease {
  kind: GrpcClientKind;
  version: string;
  nodes: number;
}

/** The gRPC releases connected per node group (connectedClients). */
export type ConnectedClients = ReadonlyMap<string, readonly ConnectedRelease[]>;

/**
 * Warnings, at the setting's file:line, for each setting some connected gRPC applications of its
 * node group would ignore or refuse, naming their releases and what they need.
 */
export function clientSupportWarnings(
  model: Model,
  clients: ConnectedClients,
  textOf: (file: string) => string | undefined,
): Diagnostic[] {
  const sink = new DiagnosticSink(textOf);
  if (!clients.size) return sink.diagnostics; // no gRPC application connected: nothing to compare
  for (const use of grpcFeatureUses(model)) {
    const feature: GrpcFeature = GRPC_FEATURES[use.feature];
    const doc = docOf(model, use.kind, use.name);
    const origin = doc && originOf(doc);
    const ref: DocRef | undefined = origin && { origin, kind: use.kind, name: use.name };
    for (const group of use.groups) {
      const lacking: [release: string, nodes: number][] = [];
      const needEnv = new Set<string>();
      for (const { kind, version, nodes } of clients.get(group) ?? []) {
        if (!honours(feature, kind, version)) lacking.push([`${GRPC_CLIENT_NAMES[kind]} ${version}`, nodes]);
        else if (feature.env?.[kind]) needEnv.add(`${GRPC_CLIENT_NAMES[kind]} needs ${feature.env[kind]}`);
      }
      if (lacking.length) {
        const since = supportedFrom(feature);
        sink.warn(
          Codes.CLIENT_COMPAT,
          ref,
          use.path,
          `node group "${group}" has gRPC applications that ${feature.without === 'ignores' ? 'ignore' : 'refuse'} ` +
            `${feature.what} (gRFC ${feature.gRFC}): ${releaseList(lacking)}; ` +
            (since.length ? `supported from ${since.join(', ')}` : 'no gRPC release supports it'),
        );
      }
      if (needEnv.size)
        sink.warn(
          Codes.CLIENT_COMPAT,
          ref,
          use.path,
          `node group "${group}": ${feature.what} (gRFC ${feature.gRFC}): ${[...needEnv].join('; ')} in the ` +
            `application environment, or it ${feature.without === 'ignores' ? 'ignores' : 'refuses'} them`,
        );
    }
  }
  return sink.diagnostics;
}

/** At most this many releases are named in one warning, those of the most nodes first. */
const LISTED_RELEASES = 8;

export function releaseList(releases: [release: string, nodes: number][]): string {
  releases.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const shown = releases.slice(0, LISTED_RELEASES).map(([release, n]) => `${release} (${n} node${n === 1 ? '' : 's'})`);
  const more = releases.length - LISTED_RELEASES;
  return more > 0 ? `${shown.join(', ')} and ${more} more release${more === 1 ? '' : 's'}` : shown.join(', ');
}

/**
 * The gRPC releases among connected nodes, per group (Envoys and unknown agents left out): one
 * entry per implementation and release the table reads, never per text a client sends.
 */
export function connectedClients(nodes: readonly { group: string; userAgent: string }[]): ConnectedClients {
  const out = new Map<string, Map<string, ConnectedRelease>>();
  for (const n of nodes) {
    const c = grpcClientOf(n.userAgent);
    if (!c) continue;
    let g = out.get(n.group);
    if (!g) out.set(n.group, (g = new Map<string, ConnectedRelease>()));
    const key = `${c.kind} ${c.version}`;
    const release = g.get(key);
    if (release) release.nodes++;
    else g.set(key, { ...c, nodes: 1 });
  }
  return new Map([...out].map(([group, releases]) => [group, [...releases.values()]]));
}
