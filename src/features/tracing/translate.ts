/** Tracing in Envoy's terms: the connection manager's `tracing` (provider, sampling, custom tags). */
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import type { TracingDoc } from './schema.ts';

const ZIPKIN = 'type.googleapis.com/envoy.config.trace.v3.ZipkinConfig';
const OPEN_TELEMETRY = 'type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig';

export function tracingConfig(t: TracingDoc): JsonObject {
  const provider = t.zipkin
    ? {
        name: 'envoy.tracers.zipkin',
        typed_config: {
          '@type': ZIPKIN,
          collector_cluster: t.zipkin.service,
          collector_endpoint: t.zipkin.path ?? '/api/v2/spans',
          collector_endpoint_version: 'HTTP_JSON',
        },
      }
    : {
        name: 'envoy.tracers.opentelemetry',
        typed_config: compact({
          '@type': OPEN_TELEMETRY,
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

/** The collector the spans go to. */
export function tracingServices(t: TracingDoc | undefined): string[] {
  const s = t?.zipkin?.service ?? t?.openTelemetry?.service;
  return s ? [s] : [];
}
