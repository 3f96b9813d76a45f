/**
 * What the features add to a listener, in Envoy's order: the HTTP filters before the router (by
 * phase, then in the registry's order), what a route configuration, virtual host or route sets for
 * them (typed_per_filter_config), connection-manager fields, access logs, and the services they
 * call (which get clusters). The features come from the registry (src/features/); edge protection,
 * whose parts are still shared with gRPC servers and upstream TLS, is one more entry here.
 */
import { FEATURES } from '../features/registry.ts';
import type { JsonObject } from '../features/kit/envoy-json.ts';
import { HTTP_PHASES, type Feature, type HttpPhase } from '../features/kit/feature.ts';
import type { ListenerDoc, RouteDoc, VirtualHostDoc } from '../model/schema.ts';
import { perFilterConfig, protectionFilters, protectionServices, protectionsUsed } from './protection.ts';

/**
 * What a route configuration, virtual host or route sets (an override) or turns off (`false`): a
 * route's fields, whose types hold the virtual host's.
 */
export type FilterOverrides = Partial<
  Pick<RouteDoc, 'access' | 'jwt' | 'extAuth' | 'rateLimit' | 'globalRateLimit' | 'cors' | 'compression'>
>;

export interface ListenerHooks {
  readonly name: string;
  readonly phase?: HttpPhase;
  filters?(l: ListenerDoc, vhosts: readonly VirtualHostDoc[]): JsonObject[];
  /** `forwarded`: the listener trusts x-forwarded-for. */
  perFilterConfig?(o: FilterOverrides, forwarded: boolean): JsonObject | undefined;
  connectionManager?(l: ListenerDoc): JsonObject | undefined;
  accessLog?(l: ListenerDoc, tcp: boolean): JsonObject[];
  services?(l: ListenerDoc): string[];
}

const PROTECTION: ListenerHooks = {
  name: 'protection',
  phase: 'protection',
  filters: (l, vhosts) => protectionFilters(l, protectionsUsed(vhosts)),
  perFilterConfig: (o, forwarded) => perFilterConfig(o, forwarded),
  services: (l) => protectionServices(l),
};

/** A feature as the builders use it: the model's documents fit every feature's hooks (checked here). */
function hooksOf(f: Feature<ListenerDoc, VirtualHostDoc, FilterOverrides>): ListenerHooks {
  const { http, connectionManager, accessLog, services } = f;
  return {
    name: f.name,
    phase: http?.phase,
    filters: http?.filters,
    perFilterConfig: http?.perFilterConfig && ((o) => http.perFilterConfig!(o)),
    connectionManager,
    accessLog,
    services,
  };
}

const rank = (h: ListenerHooks) => (h.phase === undefined ? HTTP_PHASES.length : HTTP_PHASES.indexOf(h.phase));

/** Every feature's hooks: HTTP filters' features by phase (stable: registry order within one). */
export const LISTENER_HOOKS: readonly ListenerHooks[] = [...FEATURES.map(hooksOf), PROTECTION]
  .map((h, i) => ({ h, i }))
  .sort((a, b) => rank(a.h) - rank(b.h) || a.i - b.i)
  .map(({ h }) => h);

/** The HTTP filters of a listener before the router, in Envoy's order. */
export function httpFilters(l: ListenerDoc, vhosts: readonly VirtualHostDoc[]): JsonObject[] {
  return LISTENER_HOOKS.flatMap((f) => f.filters?.(l, vhosts) ?? []);
}

/** The typed_per_filter_config of a route configuration, virtual host or route; undefined when empty. */
export function filterConfigs(o: FilterOverrides, forwarded: boolean): JsonObject | undefined {
  const all: JsonObject = {};
  for (const f of LISTENER_HOOKS) Object.assign(all, f.perFilterConfig?.(o, forwarded));
  return Object.keys(all).length ? all : undefined;
}

/** The connection manager's fields the features set. */
export function connectionManagerFields(l: ListenerDoc): JsonObject {
  const all: JsonObject = {};
  for (const f of LISTENER_HOOKS) Object.assign(all, f.connectionManager?.(l));
  return all;
}

/** A listener's access_log entries, for its connection manager or (`tcp`) its TCP proxies. */
export function listenerAccessLogs(l: ListenerDoc, tcp: boolean): JsonObject[] {
  return LISTENER_HOOKS.flatMap((f) => f.accessLog?.(l, tcp) ?? []);
}

/** The services a listener's features call. */
export function featureServices(l: ListenerDoc): string[] {
  return LISTENER_HOOKS.flatMap((f) => f.services?.(l) ?? []);
}
