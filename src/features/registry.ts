/**
 * The features of the YAML model that live in a folder of their own, in one list: the schema takes
 * their fields from it, the checker runs their checks, and the listener, route and cluster builders
 * add what they produce. A new feature is its folder and one line here (HTTP filters are ordered by
 * their phase, then by this list).
 */
import type { TProperties } from '@sinclair/typebox';
import { accessLog } from './access-log/index.ts';
import { circuitBreaker } from './circuit-breaker/index.ts';
import { compression } from './compression/index.ts';
import { cors } from './cors/index.ts';
import { expiry } from './expiry/index.ts';
import { fault } from './fault/index.ts';
import { healthCheck } from './health-check/index.ts';
import { httpSettings } from './http-settings/index.ts';
import { loadBalancing } from './load-balancing/index.ts';
import { locality } from './locality/index.ts';
import type { FeatureFields } from './kit/feature.ts';
import { mirror } from './mirror/index.ts';
import { outlierDetection } from './outlier-detection/index.ts';
import { protection } from './protection/index.ts';
import { tracing } from './tracing/index.ts';
import { websocket } from './websocket/index.ts';

export const FEATURES = [
  cors,
  httpSettings,
  websocket,
  protection,
  compression,
  fault,
  tracing,
  accessLog,
  mirror,
  loadBalancing,
  locality,
  healthCheck,
  outlierDetection,
  circuitBreaker,
  expiry,
] as const;

type Registered = (typeof FEATURES)[number];
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The fields every feature adds to one kind of document, as one set of TypeBox properties. */
export type FieldsAt<K extends keyof FeatureFields> = UnionToIntersection<
  Registered extends infer F ? (F extends { fields: { [P in K]: infer X } } ? X : never) : never
> &
  TProperties;

function fieldsAt<K extends keyof FeatureFields>(at: K): FieldsAt<K> {
  const out: TProperties = {};
  for (const f of FEATURES as readonly { fields: FeatureFields }[]) Object.assign(out, f.fields[at]);
  return out as FieldsAt<K>;
}

export const LISTENER_FIELDS = fieldsAt('listener');
export const VIRTUAL_HOST_FIELDS = fieldsAt('virtualHost');
export const ROUTE_FIELDS = fieldsAt('route');
export const SERVICE_FIELDS = fieldsAt('service');
