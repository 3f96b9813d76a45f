/**
 * HTTP features beyond routing in Envoy's terms: request mirror policies, CORS (a filter on the
 * listeners whose virtual hosts or routes set it, the policy per virtual host or route), response
 * compressors (one filter per algorithm, off per route), and the connection manager's tracing.
 */
import type { VirtualHostDoc } from '../model/schema.ts';
import type { CompressionDoc, CorsDoc, MirrorDoc, TracingDoc } from '../model/traffic-schema.ts';
import { parseDurationMs } from '../shared/duration.ts';
import { compact, perMillion, stringMatcher, TYPE, type JsonObject } from './common.ts';

const CORS_FILTER = 'envoy.filters.http.cors';
const ALGORITHMS = ['gzip', 'brotli', 'zstd'] as const;
const compressorName = (a: (typeof ALGORITHMS)[number]) => `envoy.filters.http.compressor.${a}`;
const LIBRARY_TYPE: Record<(typeof ALGORITHMS)[number], string> = {
  gzip: 'type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip',
  brotli: 'type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli',
  zstd: 'type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd',
};

/** A CORS policy that is never enabled: a route's `cors: false` under a virtual host's policy. */
const OFF = { default_value: {}, runtime_key: 'fleetxds.cors.disabled' };

export function mirrorPolicies(m: MirrorDoc | undefined): JsonObject[] | undefined {
  return m?.map((t) =>
    compact({
      cluster: t.to,
      runtime_fraction:
        t.percent === undefined || t.percent === 100 ? undefined : { default_value: perMillion(t.percent) },
    }),
  );
}

function corsPolicy(c: CorsDoc): JsonObject {
  return compact({
    '@type': TYPE.corsPolicy,
    allow_origin_string_match: c.origins.map((o) => stringMatcher(o)),
    allow_methods: c.methods?.join(','),
    allow_headers: c.allowHeaders?.join(','),
    expose_headers: c.exposeHeaders?.join(','),
    max_age: c.maxAge && String(Math.floor((parseDurationMs(c.maxAge) ?? 0) / 1000)),
    allow_credentials: c.credentials,
  });
}

/** What a virtual host or route sets for CORS: its policy, or (a route's false) none of its virtual host's. */
export function corsPerFilterConfig(o: { cors?: CorsDoc | false }): JsonObject | undefined {
  if (o.cors) return { [CORS_FILTER]: corsPolicy(o.cors) };
  if (o.cors === false) return { [CORS_FILTER]: { '@type': TYPE.corsPolicy, filter_enabled: OFF } };
  return undefined;
}

/** A virtual host or route with compression off: every compressor off. */
export function compressionPerFilterConfig(o: { compression?: false }): JsonObject | undefined {
  if (o.compression !== false) return undefined;
  const out: JsonObject = {};
  for (const a of ALGORITHMS) out[compressorName(a)] = { '@type': TYPE.compressorPerRoute, disabled: true };
  return out;
}

/** Whether some virtual host of a listener, or one of its routes, sets a CORS policy. */
export function usesCors(vs: readonly VirtualHostDoc[]): boolean {
  return vs.some(hasCors);
}

/** By document, like the protections a virtual host uses. */
const corsByVhost = new WeakMap<VirtualHostDoc, boolean>();

function hasCors(v: VirtualHostDoc): boolean {
  let has = corsByVhost.get(v);
  if (has === undefined) corsByVhost.set(v, (has = !!v.cors || v.routes.some((r) => !!r.cors)));
  return has;
}

/** The CORS filter, on a listener some of whose virtual hosts or routes set a policy. */
export function corsFilters(vs: readonly VirtualHostDoc[]): JsonObject[] {
  return usesCors(vs) ? [{ name: CORS_FILTER, typed_config: { '@type': TYPE.cors } }] : [];
}

/** One compressor filter per algorithm the listener's compression names. */
export function compressorFilters(c: CompressionDoc | undefined): JsonObject[] {
  if (!c) return [];
  return c.algorithms.map((a) => ({
    name: compressorName(a),
    typed_config: {
      '@type': TYPE.compressor,
      response_direction_config: {
        common_config: compact({ min_content_length: c.minLength, content_type: c.contentTypes }),
      },
      compressor_library: { name: a, typed_config: { '@type': LIBRARY_TYPE[a] } },
    },
  }));
}

/** The connection manager's `tracing`: the provider, sampling and tags. */
export function tracingConfig(t: TracingDoc | undefined): JsonObject | undefined {
  if (!t) return undefined;
  const provider = t.zipkin
    ? {
        name: 'envoy.tracers.zipkin',
        typed_config: {
          '@type': TYPE.zipkin,
          collector_cluster: t.zipkin.service,
          collector_endpoint: t.zipkin.path ?? '/api/v2/spans',
          collector_endpoint_version: 'HTTP_JSON',
        },
      }
    : {
        name: 'envoy.tracers.opentelemetry',
        typed_config: compact({
          '@type': TYPE.openTelemetry,
          grpc_service: { envoy_grpc: { cluster_name: t.openTelemetry!.service } },
          service_name: t.serviceName,
        }),
      };
  return compact({
    provider,
    random_sampling: t.samplePercent === undefined ? undefined : { value: t.samplePercent },
    custom_tags: t.tags
      ? Object.entries(t.tags).map(([tag, from]) =>
          from.header !== undefined
            ? { tag, request_header: { name: from.header } }
            : { tag, literal: { value: from.literal ?? '' } },
        )
      : undefined,
  });
}

/** The services the listener's tracing sends spans to. */
export function tracingServices(t: TracingDoc | undefined): string[] {
  const s = t?.zipkin?.service ?? t?.openTelemetry?.service;
  return s ? [s] : [];
}
