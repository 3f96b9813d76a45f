/**
 * Which services a document sends traffic to, and so which node groups call each service: the
 * services a group's clusters are made for (src/translate), and what checks across documents ask.
 */
import type { Feature } from '../features/kit/feature.ts';
import { FEATURES } from '../features/registry.ts';
import type { ListenerDoc, RouteDoc, ServiceDoc, VirtualHostDoc } from './schema.ts';
import { connectedServices, docOf, listenerGroups, routeTargets, type Model } from './types.ts';

const CALLING: readonly Feature<ListenerDoc, VirtualHostDoc, RouteDoc, ServiceDoc>[] = FEATURES;

/** The services a listener's features call (an authorization or rate-limit service). */
export function featureServices(l: ListenerDoc): string[] {
  return CALLING.flatMap((f) => f.services?.(l) ?? []);
}

/** The services a document's routes send traffic to (and mirror it to), each once. */
export function targetsOf(
  routes: readonly { to?: string; split?: { service: string }[]; mirror?: { to: string }[] }[],
): string[] {
  const out = new Set<string>();
  for (const r of routes) {
    for (const t of routeTargets(r)) out.add(t);
    for (const m of r.mirror ?? []) out.add(m.to);
  }
  return [...out];
}

/** The services a listener itself sends to: its TCP proxying, passthrough, and features' services. */
export function listenerTargets(l: ListenerDoc): string[] {
  return [...new Set([...targetsOf([...(l.tcp ? [l.tcp] : []), ...(l.passthrough ?? [])]), ...featureServices(l)])];
}

/** By service: the node groups whose proxies call it, and those whose gRPC applications do. */
export interface Callers {
  readonly envoy: ReadonlyMap<string, ReadonlySet<string>>;
  readonly grpc: ReadonlyMap<string, ReadonlySet<string>>;
}

/** Who calls each service (an aggregate's members with it), from the model's listeners and gRPC services. */
export function callersOf(model: Model): Callers {
  const add = (into: Map<string, Set<string>>, names: readonly string[], groups: readonly string[]) => {
    for (const name of names) {
      const s = docOf(model, 'Service', name) as ServiceDoc | undefined;
      for (const t of [name, ...(s?.aggregate ? connectedServices(model, s).map((m) => m.name) : [])]) {
        let set = into.get(t);
        if (!set) into.set(t, (set = new Set()));
        for (const g of groups) set.add(g);
      }
    }
  };
  const envoy = new Map<string, Set<string>>();
  const grpc = new Map<string, Set<string>>();
  for (const l of model.listeners) {
    const groups = listenerGroups(l);
    add(envoy, listenerTargets(l), groups);
    for (const n of l.virtualHosts ?? []) {
      const v = docOf(model, 'VirtualHost', n) as VirtualHostDoc | undefined;
      if (v) add(envoy, targetsOf(v.routes), groups);
    }
  }
  for (const g of model.grpcServices) add(grpc, targetsOf(g.routes), listenerGroups(g));
  return { envoy, grpc };
}
