/**
 * Model -> Envoy v3 resources for one node group. Pure: no I/O, no clock, no randomness; the same
 * model always yields the same JSON (and therefore the same bytes and versions on every replica).
 */
import type { GrpcServiceDoc, ServiceDoc, VirtualHostDoc } from '../model/schema.ts';
import { changedNames, findByName, patchByName, recordDelta } from '../shared/sorted-lists.ts';
import {
  byName,
  docOf,
  isProxylessGroup,
  listenerGroups,
  originKey,
  type Model,
  type SecretMaterial,
} from '../model/types.ts';
import { buildGrpcServerListener, grpcServerListenerName } from './grpc-server.ts';
import type { ResourceKind } from '../xds/resource-types.ts';
import { buildCluster } from './cluster.ts';
import type { JsonObject } from '../features/kit/envoy-json.ts';
import { buildLoadAssignment } from './endpoints.ts';
import { buildApiListener, buildListener } from './listener.ts';
import { buildRouteConfiguration, buildVirtualHost, grpcRoute } from './route.ts';
import { scopedVirtualHost } from './features.ts';
import { TranslationMemo } from './memo.ts';
import { listenerTargets, targetsOf } from '../model/targets.ts';
import { secretResource } from './secret.ts';
import { OVERRIDE_LAYER, overrideLayer, RUNTIME_LAYER, runtimeLayer } from './runtime.ts';

export interface TranslatedResource {
  kind: ResourceKind;
  name: string;
  json: JsonObject;
  /** `Kind/name` of the operator document this resource comes from (to locate problems). */
  origin: string;
  /** For route configurations: origin of each entry of `virtual_hosts`, by index. */
  virtualHostOrigins?: string[];
  /** EnvoyPatch documents that changed it, in order, with the JSON pointers each changed. */
  patches?: readonly { patch: string; paths: readonly string[] }[];
}

/** A group's resources by kind, each list in name order. */
export type GroupResources = Readonly<Record<ResourceKind, readonly TranslatedResource[]>>;

/** Listeners and route configurations of a group, and what they use. */
interface Front {
  listeners: TranslatedResource[];
  routes: TranslatedResource[];
  /** Extension configs (ECDS) the listeners' policy filters name. */
  extensions: TranslatedResource[];
  /** Services some route of the group targets (only those get clusters). */
  used: ReadonlySet<string>;
  /** The services each carried virtual host or gRPC service targets (memoized per document). */
  targets: readonly (readonly string[])[];
  secretRefs: readonly string[];
  /** A group of gRPC applications only (isProxylessGroup): clusters take TLS from certificate providers. */
  proxyless: boolean;
}

/** Clusters and endpoints of a group, and the secrets they use. */
interface Back {
  clusters: TranslatedResource[];
  endpoints: TranslatedResource[];
  secretRefs: readonly string[];
  /** The services that get clusters: those targeted, and the members of targeted aggregates. */
  served: ReadonlySet<string>;
}

/**
 * `secrets` is the TLS material read for the model's Secret documents (an input, so translation
 * stays pure); a group gets the secrets its listeners and clusters reference.
 *
 * Work is split in sections whose inputs are model lists: a list no document of which changed is
 * the same array as last time (src/model/assemble.ts), so a section whose inputs are the same
 * objects hands back its previous lists, and the build reuses their encodings and snapshots as
 * they are. A one-route edit translates the group's listeners and routes, not its 10,000 clusters.
 */
export function translateGroup(
  model: Model,
  group: string,
  secrets: ReadonlyMap<string, SecretMaterial> = new Map(),
  /** Results by document identity, kept across builds by the caller (a fresh one: nothing reused). */
  memo: TranslationMemo = new TranslationMemo(),
): GroupResources {
  const front = memo.section<Front>(
    `front\u0000${group}`,
    [model.listeners, model.virtualHosts, model.grpcServices, model.grpcServers],
    (prev) => translateFront(model, group, memo, prev?.value),
  );
  const { proxyless } = front;
  const workload = findByName(model.nodeGroups, group)?.workload;
  const back = memo.section<Back>(`back\u0000${group}`, [model.services, front.used, proxyless, workload], (prev) => {
    const services = prev?.inputs[0] as readonly ServiceDoc[] | undefined;
    const same = prev?.inputs[1] === front.used && prev.inputs[2] === proxyless && prev.inputs[3] === workload;
    const names = same ? changedNames(services, model.services) : undefined;
    return (
      (names && patchBack(prev!.value, services!, model.services, names, memo, proxyless, workload)) ??
      translateBack(model, front.used, memo, proxyless, workload)
    );
  });
  const secret = memo.section(`secret\u0000${group}`, [secrets, front.secretRefs, back.secretRefs], () =>
    [...new Set([...front.secretRefs, ...back.secretRefs])].sort().flatMap((name) => {
      const m = secrets.get(name);
      return m ? [translateSecret(m, memo)] : [];
    }),
  );
  const runtimes = model.runtimes ?? [];
  const runtime = memo.section(`runtime\u0000${group}`, [runtimes, model.virtualHosts], () => [
    {
      kind: 'runtime' as const,
      name: RUNTIME_LAYER,
      json: runtimeLayer(runtimes, group),
      origin: originKey('Runtime', RUNTIME_LAYER),
    },
    {
      kind: 'runtime' as const,
      name: OVERRIDE_LAYER,
      json: overrideLayer(runtimes, model.virtualHosts, group),
      origin: originKey('Runtime', OVERRIDE_LAYER),
    },
  ]);
  return {
    cluster: back.clusters,
    endpoint: back.endpoints,
    listener: front.listeners,
    route: front.routes,
    extension: front.extensions,
    secret,
    runtime,
  };
}

function translateFront(model: Model, group: string, memo: TranslationMemo, prev: Front | undefined): Front {
  // Listeners and routes come from two lists (listeners, gRPC services): sorted by name at the end.
  const listeners: TranslatedResource[] = [];
  const routes: TranslatedResource[] = [];
  const extensions: TranslatedResource[] = [];
  const secretRefs = new Set<string>();
  const targets: (readonly string[])[] = [];
  const use = (names: readonly string[]) => targets.push(names);
  for (const l of model.listeners) {
    if (!listenerGroups(l).includes(group)) continue;
    const vs = (l.virtualHosts ?? []).flatMap((n) => {
      const v = docOf(model, 'VirtualHost', n) as VirtualHostDoc | undefined;
      return v ? [v] : [];
    });
    if (l.tls)
      for (const n of [l.tls.secret, l.tls.clientCa, ...(l.tls.sni ?? []).map((e) => e.secret)])
        if (n) secretRefs.add(n);
    for (const v of vs) use(memo.once('targets', v, (d) => targetsOf(d.routes)));
    use(memo.once('listener-targets', l, listenerTargets));
    // Its virtual hosts' protections put filters in its chain.
    const built = memo.with('listener', l, vs, () => buildListener(l, vs));
    listeners.push({ kind: 'listener', name: l.name, json: built.json, origin: originKey('Listener', l.name) });
    for (const e of built.extensions)
      extensions.push({
        kind: 'extension',
        name: e.name as string,
        json: e,
        origin: originKey('Listener', l.name),
      });
    // A TCP listener has no routes.
    if (!l.virtualHosts) continue;
    routes.push({
      kind: 'route',
      name: l.name,
      // Each virtual host keeps its JSON object while its document is unchanged: the encoder then
      // re-encodes only the virtual hosts an edit touched (ResourceType.parts).
      json: memo.with('route', l, vs, () =>
        buildRouteConfiguration(
          l.name,
          vs,
          // One build per document and listener trust (address rules depend on it), seen with
          // the listener's names for its discovered filters.
          (v, forwarded) =>
            scopedVirtualHost(
              memo.once(forwarded ? 'vhost-forwarded' : 'vhost', v, (d) => buildVirtualHost(d, forwarded)),
              built.renamed,
            ),
          l,
        ),
      ),
      origin: originKey('Listener', l.name),
      virtualHostOrigins: vs.map((v) => originKey('VirtualHost', v.name)),
    });
  }
  for (const g of model.grpcServices) {
    if (!listenerGroups(g).includes(group)) continue;
    use(memo.once('targets', g, (d) => targetsOf(d.routes)));
    listeners.push({
      kind: 'listener',
      name: g.target,
      json: memo.once('api-listener', g, buildApiListener),
      origin: originKey('GrpcService', g.name),
    });
    routes.push({
      kind: 'route',
      name: g.target,
      json: memo.once('grpc-route', g, grpcRouteConfiguration),
      origin: originKey('GrpcService', g.name),
    });
  }
  for (const s of model.grpcServers ?? []) {
    if (!listenerGroups(s).includes(group)) continue;
    // Its TLS comes from the application's certificate providers: no secret to send.
    listeners.push({
      kind: 'listener',
      name: grpcServerListenerName(s),
      json: memo.once('grpc-server', s, buildGrpcServerListener),
      origin: originKey('GrpcServer', s.name),
    });
  }
  return {
    listeners: listeners.sort(byName),
    routes: routes.sort(byName),
    extensions: extensions.sort(byName),
    used: sameTargets(prev?.targets, targets) ? prev!.used : new Set(targets.flat()),
    targets,
    secretRefs: [...secretRefs],
    proxyless: isProxylessGroup(model, group),
  };
}

/**
 * Whether the group targets the same services as before, without building the set: each document
 * targets what it did (its list is the very same memoized array, or one with the same names).
 * Then `used` stays the same object, and clusters and endpoints are not translated again.
 */
function sameTargets(prev: readonly (readonly string[])[] | undefined, next: readonly (readonly string[])[]): boolean {
  if (!prev || prev.length !== next.length) return false;
  for (let i = 0; i < next.length; i++) {
    const a = prev[i]!;
    const b = next[i]!;
    if (a === b) continue;
    const names = new Set(a);
    if (names.size !== new Set(b).size || !b.every((n) => names.has(n))) return false;
  }
  return true;
}

/**
 * Clusters and endpoints in name order without sorting: the model's services are in name order.
 * `workload`: the group's own service, whose assignment its proxies' local cluster subscribes to
 * (an assignment without a cluster, unless the group also calls it).
 */
function translateBack(
  model: Model,
  used: ReadonlySet<string>,
  memo: TranslationMemo,
  proxyless: boolean,
  workload: string | undefined,
): Back {
  const clusters: TranslatedResource[] = [];
  const endpoints: TranslatedResource[] = [];
  const secretRefs = new Set<string>();
  const served = withAggregateMembers(model.services, used);
  for (const s of model.services) {
    const called = served.has(s.name);
    if (!called && s.name !== workload) continue;
    if (called && !proxyless) for (const n of secretsOf(s)) secretRefs.add(n);
    if (called) clusters.push(clusterOf(s, memo, proxyless));
    if (!s.dns && !s.aggregate) endpoints.push(endpointOf(s, memo));
  }
  return { clusters, endpoints, secretRefs: [...secretRefs], served };
}

/** `used` and the members of the aggregates in it (aggregates do not nest: validation refuses it). */
function withAggregateMembers(services: readonly ServiceDoc[], used: ReadonlySet<string>): ReadonlySet<string> {
  let out: Set<string> | undefined;
  for (const s of services)
    if (s.aggregate && used.has(s.name)) for (const m of s.aggregate) if (!used.has(m)) (out ??= new Set(used)).add(m);
  return out ?? used;
}

/**
 * The previous clusters and endpoints with those of `names` (services replaced, added or removed)
 * translated again; each list records the names it changed, for the encoder. Undefined when a
 * changed service names a secret (the group's secret references are then gathered again) or is an
 * aggregate (which services get clusters is then worked out again).
 */
function patchBack(
  prev: Back,
  before: readonly ServiceDoc[],
  after: readonly ServiceDoc[],
  names: ReadonlySet<string>,
  memo: TranslationMemo,
  proxyless: boolean,
  workload: string | undefined,
): Back | undefined {
  const docs = new Map<string, ServiceDoc | undefined>();
  for (const name of names) {
    for (const s of [findByName(before, name), findByName(after, name)])
      if (s && (secretsOf(s).length || s.aggregate)) return undefined;
    docs.set(name, prev.served.has(name) || name === workload ? findByName(after, name) : undefined);
  }
  const clusters = patchByName(prev.clusters, names, (name) => {
    const s = docs.get(name);
    return s && prev.served.has(name) ? clusterOf(s, memo, proxyless) : undefined;
  });
  const endpoints = patchByName(prev.endpoints, names, (name) => {
    const s = docs.get(name);
    return s && !s.dns ? endpointOf(s, memo) : undefined;
  });
  recordDelta(clusters, prev.clusters, names);
  recordDelta(endpoints, prev.endpoints, names);
  return { clusters, endpoints, secretRefs: prev.secretRefs, served: prev.served };
}

/** The secrets a service's cluster names (its upstream TLS). */
function secretsOf(s: ServiceDoc): string[] {
  return [s.tls?.caSecret, s.tls?.clientSecret].filter((n): n is string => !!n);
}

function clusterOf(s: ServiceDoc, memo: TranslationMemo, proxyless: boolean): TranslatedResource {
  return {
    kind: 'cluster',
    name: s.name,
    json: proxyless
      ? memo.once('grpc-cluster', s, (d) => buildCluster(d, true))
      : memo.once('cluster', s, buildCluster),
    origin: originKey('Service', s.name),
  };
}

function endpointOf(s: ServiceDoc, memo: TranslationMemo): TranslatedResource {
  const json = memo.once('endpoint', s, buildLoadAssignment);
  return { kind: 'endpoint', name: s.name, json, origin: originKey('Service', s.name) };
}

/** The Envoy Secret of one secret's TLS material (also used alone when certificates rotate). */
export function translateSecret(m: SecretMaterial, memo: TranslationMemo = new TranslationMemo()): TranslatedResource {
  return {
    kind: 'secret',
    name: m.name,
    json: memo.once('secret', m, secretResource),
    origin: originKey('Secret', m.name),
  };
}

function grpcRouteConfiguration(g: GrpcServiceDoc): JsonObject {
  return {
    name: g.target,
    virtual_hosts: [{ name: g.name, domains: [g.target], routes: g.routes.map(grpcRoute) }],
  };
}
