/**
 * What the features (src/features/) add to Envoy's resources, for the builders, which name no
 * feature: a listener's HTTP filters before the router in Envoy's order (by phase, then in the
 * registry's order), its connection-manager fields, access logs and TCP network filters; what a route
 * configuration, virtual host or route sets for the filters (typed_per_filter_config); fields of
 * virtual hosts, route actions and clusters; and the services the features call (which get clusters).
 */
import type { JsonObject } from '../features/kit/envoy-json.ts';
import { HTTP_PHASES, type Feature } from '../features/kit/feature.ts';
import { FEATURES } from '../features/registry.ts';
import { adsConfigSource } from './common.ts';
import type { ListenerDoc, RouteDoc, ServiceDoc, VirtualHostDoc } from '../model/schema.ts';

/** A feature as the builders call it: the model's documents fit every feature's hooks (checked here). */
type Built = Feature<ListenerDoc, VirtualHostDoc, RouteDoc, ServiceDoc>;

const rank = (f: Built) => HTTP_PHASES.indexOf(f.http!.phase);

/** The features in the registry's order: what each adds besides HTTP filters is merged in this order. */
export const BUILT_FEATURES: readonly Built[] = FEATURES;

/** The features with HTTP filters by phase (stable: registry order within one), as Envoy runs them. */
const BY_PHASE: readonly Built[] = BUILT_FEATURES.filter((f) => f.http)
  .map((f, i) => ({ f, i }))
  .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
  .map(({ f }) => f);

/** What `part` gives for each feature, merged in registry order (called per route and cluster: no arrays). */
function merged(part: (f: Built) => JsonObject | undefined): JsonObject {
  const out: JsonObject = {};
  for (const f of BUILT_FEATURES) {
    const fields = part(f);
    if (fields) mergeInto(out, fields);
  }
  return out;
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Two features may set fields of one message (a Cluster's common_lb_config): their fields are merged. */
function mergeInto(out: JsonObject, fields: JsonObject): void {
  for (const [k, v] of Object.entries(fields)) {
    const before = out[k];
    if (isObject(before) && isObject(v)) {
      const both = { ...before };
      mergeInto(both, v);
      out[k] = both;
    } else out[k] = v;
  }
}

/** Filters whose settings travel as extension configs (Feature.http.discovered). */
const DISCOVERED: ReadonlySet<string> = new Set(BUILT_FEATURES.flatMap((f) => f.http?.discovered ?? []));

/**
 * The extension config (ECDS) of filter `filter` on listener `listener`. Envoy shares one
 * subscription per name among its listeners, and looks a discovered filter's per-route settings up
 * by this name only (not the filter's own), so the name is the listener's.
 */
export function extensionConfigName(listener: string, filter: string): string {
  return `${listener}/${filter}`;
}

/** A listener's HTTP filters and the extension configs some of them name. */
export interface ListenerHttpFilters {
  /** Before the router, in Envoy's order. */
  readonly filters: JsonObject[];
  /** TypedExtensionConfig resources, one per discovered filter. */
  readonly extensions: JsonObject[];
  /** Filter name -> the extension config name it has on this listener. */
  readonly renamed: ReadonlyMap<string, string>;
}

/** The HTTP filters of a listener before the router, in Envoy's order; policy filters by reference. */
export function httpFilters(l: ListenerDoc, vhosts: readonly VirtualHostDoc[]): ListenerHttpFilters {
  const filters: JsonObject[] = [];
  const extensions: JsonObject[] = [];
  const renamed = new Map<string, string>();
  for (const f of BY_PHASE.flatMap((x) => x.http?.filters?.(l, vhosts) ?? [])) {
    const config = f.typed_config as JsonObject | undefined;
    if (!DISCOVERED.has(f.name as string) || !config) {
      filters.push(f);
      continue;
    }
    const name = extensionConfigName(l.name, f.name as string);
    renamed.set(f.name as string, name);
    extensions.push({ name, typed_config: config });
    filters.push({
      name,
      config_discovery: { config_source: adsConfigSource(), type_urls: [config['@type'] as string] },
    });
  }
  return { filters, extensions, renamed };
}

/** typed_per_filter_config with the keys of discovered filters renamed; the same object when none is. */
function renameKeys(tpfc: unknown, renamed: ReadonlyMap<string, string>): JsonObject | undefined {
  if (!isObject(tpfc) || !Object.keys(tpfc).some((k) => renamed.has(k))) return undefined;
  return Object.fromEntries(Object.entries(tpfc).map(([k, v]) => [renamed.get(k) ?? k, v]));
}

/** Per built virtual host: its copy per listener that renames (kept while the virtual host is). */
const scopedCopies = new WeakMap<JsonObject, Map<string, JsonObject>>();

/**
 * A virtual host as a listener carrying it must see it: the per-route settings of the filters the
 * listener discovers keyed by their extension config names. The built virtual host itself when it
 * sets none (most do not), so one build still serves every listener.
 */
export function scopedVirtualHost(vhost: JsonObject, renamed: ReadonlyMap<string, string>): JsonObject {
  if (!renamed.size) return vhost;
  const key = [...renamed.values()].join('\u0000');
  let copies = scopedCopies.get(vhost);
  const known = copies?.get(key);
  if (known) return known;
  const own = renameKeys(vhost.typed_per_filter_config, renamed);
  const routes = vhost.routes as JsonObject[] | undefined;
  let routesChanged = false;
  const newRoutes = routes?.map((r) => {
    const t = renameKeys(r.typed_per_filter_config, renamed);
    if (!t) return r;
    routesChanged = true;
    return { ...r, typed_per_filter_config: t };
  });
  const out =
    own || routesChanged
      ? { ...vhost, ...(routesChanged ? { routes: newRoutes } : {}), ...(own ? { typed_per_filter_config: own } : {}) }
      : vhost;
  if (!copies) scopedCopies.set(vhost, (copies = new Map<string, JsonObject>()));
  copies.set(key, out);
  return out;
}

/**
 * The typed_per_filter_config of a route configuration (the listener's own overrides), virtual host
 * or route; undefined when empty. `forwarded`: the listener takes client addresses from x-forwarded-for.
 */
export function filterConfigs(o: VirtualHostDoc | RouteDoc, forwarded: boolean): JsonObject | undefined {
  const all = merged((f) => f.http?.perFilterConfig?.(o, forwarded));
  return Object.keys(all).length ? all : undefined;
}

/** The connection manager's fields the features set. */
export function connectionManagerFields(l: ListenerDoc, vhosts: readonly VirtualHostDoc[]): JsonObject {
  return merged((f) => f.connectionManager?.(l, vhosts));
}

/** A listener's access_log entries, for its connection manager or (`tcp`) its TCP proxies. */
export function listenerAccessLogs(l: ListenerDoc, tcp: boolean): JsonObject[] {
  return BUILT_FEATURES.flatMap((f) => f.accessLog?.(l, tcp) ?? []);
}

/** The network filters of a TCP listener's chains before the TCP proxy. */
export function networkFilters(l: ListenerDoc): JsonObject[] {
  return BUILT_FEATURES.flatMap((f) => f.networkFilters?.(l) ?? []);
}

export function virtualHostFields(v: VirtualHostDoc): JsonObject {
  return merged((f) => f.virtualHostFields?.(v));
}

export function routeActionFields(r: RouteDoc, v: VirtualHostDoc): JsonObject {
  return merged((f) => f.routeAction?.(r, v));
}

/** The fields the features add to the Cluster of service `s`; `proxyless`: for gRPC applications. */
export function clusterFeatureFields(s: ServiceDoc, proxyless: boolean): JsonObject {
  const at = { proxyless };
  return merged((f) => f.cluster?.(s, at));
}

/** A service's ClusterLoadAssignment as the features change it (locality weights). */
export function featureLoadAssignment(s: ServiceDoc, cla: JsonObject): JsonObject {
  let out = cla;
  for (const f of BUILT_FEATURES) if (f.loadAssignment) out = f.loadAssignment(s, out);
  return out;
}
