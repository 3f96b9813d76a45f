/**
 * The features of a listener's HTTP connection manager, in the order Envoy runs their filters. Each
 * says what it adds at the three places a feature reaches: its HTTP filters (before the router),
 * what a route configuration, virtual host or route sets for them (typed_per_filter_config), and
 * the services it calls (which get clusters). The listener, route and cluster builders loop over
 * this list: a new HTTP feature is a module of its own and one entry here.
 */
import type { ListenerDoc, RouteDoc, VirtualHostDoc } from '../model/schema.ts';
import { accessLogServices } from './access-log.ts';
import type { JsonObject } from './common.ts';
import { perFilterConfig, protectionFilters, protectionServices, type Used } from './protection.ts';
import {
  compressionPerFilterConfig,
  compressorFilters,
  corsFilters,
  corsPerFilterConfig,
  tracingServices,
} from './traffic.ts';

/**
 * What a route configuration, virtual host or route sets (an override) or turns off (`false`): a
 * route's fields, whose types hold the virtual host's.
 */
export type FilterOverrides = Partial<
  Pick<RouteDoc, 'access' | 'jwt' | 'extAuth' | 'rateLimit' | 'globalRateLimit' | 'cors' | 'compression'>
>;

export interface HttpFeature {
  readonly name: string;
  /** Its HTTP filters on this listener, given what the listener's virtual hosts and routes use. */
  filters?(l: ListenerDoc, on: { used: Used; vhosts: readonly VirtualHostDoc[] }): JsonObject[];
  /** Its typed_per_filter_config entries; `forwarded`: the listener trusts x-forwarded-for. */
  perFilterConfig?(o: FilterOverrides, forwarded: boolean): JsonObject | undefined;
  /** The services the listener's use of it calls. */
  services?(l: ListenerDoc): string[];
}

export const HTTP_FEATURES: readonly HttpFeature[] = [
  // First: a preflight never needs a token.
  { name: 'cors', filters: (_l, on) => corsFilters(on.vhosts), perFilterConfig: (o) => corsPerFilterConfig(o) },
  // Access rules, JWT, external authorization, local and global rate limits.
  {
    name: 'protection',
    filters: (l, on) => protectionFilters(l, on.used),
    perFilterConfig: (o, forwarded) => perFilterConfig(o, forwarded),
    services: (l) => protectionServices(l),
  },
  // Last before the router: responses are compressed as they leave.
  {
    name: 'compression',
    filters: (l) => compressorFilters(l.compression),
    perFilterConfig: (o) => compressionPerFilterConfig(o),
  },
  // Not filters: fields of the connection manager, whose collectors and sinks are services.
  { name: 'tracing', services: (l) => tracingServices(l.tracing) },
  { name: 'access-log', services: (l) => accessLogServices(l.accessLog) },
];

/** The HTTP filters of a listener before the router, in Envoy's order. */
export function httpFilters(l: ListenerDoc, used: Used, vhosts: readonly VirtualHostDoc[]): JsonObject[] {
  return HTTP_FEATURES.flatMap((f) => f.filters?.(l, { used, vhosts }) ?? []);
}

/** The typed_per_filter_config of a route configuration, virtual host or route; undefined when empty. */
export function filterConfigs(o: FilterOverrides, forwarded: boolean): JsonObject | undefined {
  const all: JsonObject = {};
  for (const f of HTTP_FEATURES) Object.assign(all, f.perFilterConfig?.(o, forwarded));
  return Object.keys(all).length ? all : undefined;
}

/** The services a listener's HTTP features call. */
export function featureServices(l: ListenerDoc): string[] {
  return HTTP_FEATURES.flatMap((f) => f.services?.(l) ?? []);
}
