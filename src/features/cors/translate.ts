/**
 * CORS in Envoy's terms: one filter on a listener some of whose virtual hosts or routes set a
 * policy, and the policy per virtual host or route (typed_per_filter_config).
 */
import { parseDurationMs } from '../../shared/duration.ts';
import { compact, stringMatcher, type JsonObject } from '../kit/envoy-json.ts';
import type { CorsDoc, CorsRoute, CorsVirtualHost } from './schema.ts';

const FILTER = 'envoy.filters.http.cors';
const CORS = 'type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors';
const POLICY = 'type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy';

/** A CORS policy that is never enabled: a route's `cors: false` under a virtual host's policy. */
const OFF = { default_value: {}, runtime_key: 'fleetxds.cors.disabled' };

function corsPolicy(c: CorsDoc): JsonObject {
  return compact({
    '@type': POLICY,
    allow_origin_string_match: c.origins.map((o) => stringMatcher(o)),
    allow_methods: c.methods?.join(','),
    allow_headers: c.allowHeaders?.join(','),
    expose_headers: c.exposeHeaders?.join(','),
    max_age: c.maxAge && String(Math.floor((parseDurationMs(c.maxAge) ?? 0) / 1000)),
    allow_credentials: c.credentials,
  });
}

/** What a virtual host or route sets for CORS: its policy, or (a route's false) none of its virtual host's. */
export function corsPerFilterConfig(o: CorsRoute): JsonObject | undefined {
  if (o.cors) return { [FILTER]: corsPolicy(o.cors) };
  if (o.cors === false) return { [FILTER]: { '@type': POLICY, filter_enabled: OFF } };
  return undefined;
}

/** By document: a listener's filters ask of each of its virtual hosts, per listener and group. */
const corsByVhost = new WeakMap<CorsVirtualHost, boolean>();

function hasCors(v: CorsVirtualHost): boolean {
  let has = corsByVhost.get(v);
  if (has === undefined) corsByVhost.set(v, (has = !!v.cors || v.routes.some((r) => !!r.cors)));
  return has;
}

/** The CORS filter, on a listener some of whose virtual hosts or routes set a policy. */
export function corsFilters(vhosts: readonly CorsVirtualHost[]): JsonObject[] {
  return vhosts.some(hasCors) ? [{ name: FILTER, typed_config: { '@type': CORS } }] : [];
}
