/**
 * Model -> Envoy v3 resources for one node group. Pure: no I/O, no clock, no randomness; the same
 * model always yields the same JSON (and therefore the same bytes and versions on every replica).
 */
import type { GrpcServiceDoc } from '../model/schema.ts';
import { byName, listenerGroups, originKey, type Model, type SecretMaterial } from '../model/types.ts';
import type { ResourceKind } from '../xds/resource-types.ts';
import { buildCluster } from './cluster.ts';
import type { JsonObject } from './common.ts';
import { buildLoadAssignment } from './endpoints.ts';
import { buildApiListener, buildListener } from './listener.ts';
import { buildRouteConfiguration, buildVirtualHost, grpcRoute } from './route.ts';
import { TranslationMemo } from './memo.ts';
import { secretResource } from './secret.ts';

export interface TranslatedResource {
  kind: ResourceKind;
  name: string;
  json: JsonObject;
  /** `Kind/name` of the operator document this resource comes from (to locate problems). */
  origin: string;
  /** For route configurations: origin of each entry of `virtual_hosts`, by index. */
  virtualHostOrigins?: string[];
}

/**
 * `secrets` is the TLS material read for the model's Secret documents (an input, so translation
 * stays pure); a group gets the secrets its listeners and clusters reference.
 */
export function translateGroup(
  model: Model,
  group: string,
  secrets: ReadonlyMap<string, SecretMaterial> = new Map(),
  /** Results by document identity, kept across builds by the caller (a fresh one: nothing reused). */
  memo: TranslationMemo = new TranslationMemo(),
): TranslatedResource[] {
  // Listeners and routes come from two lists (listeners, gRPC services): sorted by name at the end.
  const listeners: TranslatedResource[] = [];
  const routes: TranslatedResource[] = [];
  const secretRefs = new Set<string>();
  const services = new Set(model.services.map((s) => s.name));
  const vhosts = new Map(model.virtualHosts.map((v) => [v.name, v]));
  const used = new Set<string>();
  const use = (name: string) => {
    if (services.has(name)) used.add(name);
  };

  for (const l of model.listeners) {
    if (!listenerGroups(l).includes(group)) continue;
    const vs = l.virtualHosts.map((n) => vhosts.get(n)!).filter(Boolean);
    if (l.tls)
      for (const n of [l.tls.secret, l.tls.clientCa, ...(l.tls.sni ?? []).map((e) => e.secret)])
        if (n) secretRefs.add(n);
    for (const v of vs) for (const r of v.routes) forEachTarget(r, use);
    listeners.push({
      kind: 'listener',
      name: l.name,
      json: memo.once('listener', l, buildListener),
      origin: originKey('Listener', l.name),
    });
    routes.push({
      kind: 'route',
      name: l.name,
      // Each virtual host keeps its JSON object while its document is unchanged: the encoder then
      // re-encodes only the virtual hosts an edit touched (ResourceType.parts).
      json: memo.with('route', l, vs, () =>
        buildRouteConfiguration(l.name, vs, (v) => memo.once('vhost', v, buildVirtualHost)),
      ),
      origin: originKey('Listener', l.name),
      virtualHostOrigins: vs.map((v) => originKey('VirtualHost', v.name)),
    });
  }
  for (const g of model.grpcServices) {
    if (!listenerGroups(g).includes(group)) continue;
    for (const r of g.routes) forEachTarget(r, use);
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
  // Clusters and endpoints in name order without sorting: the model's services are in name order.
  const clusters: TranslatedResource[] = [];
  const endpoints: TranslatedResource[] = [];
  for (const s of model.services) {
    if (!used.has(s.name)) continue;
    for (const n of [s.tls?.caSecret, s.tls?.clientSecret]) if (n) secretRefs.add(n);
    const origin = originKey('Service', s.name);
    clusters.push({ kind: 'cluster', name: s.name, json: memo.once('cluster', s, buildCluster), origin });
    if (!s.dns)
      endpoints.push({ kind: 'endpoint', name: s.name, json: memo.once('endpoint', s, buildLoadAssignment), origin });
  }
  const secretsOut: TranslatedResource[] = [];
  for (const name of [...secretRefs].sort()) {
    const m = secrets.get(name);
    if (m) secretsOut.push(translateSecret(m, memo));
  }
  // By kind, then name.
  return [...clusters, ...endpoints, ...listeners.sort(byName), ...routes.sort(byName), ...secretsOut];
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

function forEachTarget(r: { to?: string; split?: { service: string }[] }, fn: (name: string) => void): void {
  if (r.to !== undefined) fn(r.to);
  for (const t of r.split ?? []) fn(t.service);
}

function grpcRouteConfiguration(g: GrpcServiceDoc): JsonObject {
  return {
    name: g.target,
    virtual_hosts: [{ name: g.name, domains: [g.target], routes: g.routes.map(grpcRoute) }],
  };
}
