/** Tracing rules a schema cannot express: one provider, collectors that exist and speak its protocol. */
import { Codes } from '../../shared/diagnostics.ts';
import type { FeatureCheck } from '../kit/feature.ts';
import type { TracingListener } from './schema.ts';

export function checkTracing(l: TracingListener, c: FeatureCheck): void {
  const t = l.tracing;
  if (!t) return;
  if (!l.virtualHosts) c.error(Codes.INVALID_VALUE, ['tracing'], 'tracing is for HTTP listeners: this one proxies TCP');
  if ((t.zipkin === undefined) === (t.openTelemetry === undefined))
    c.error(Codes.INVALID_VALUE, ['tracing'], 'tracing needs one of zipkin and openTelemetry');
  if (t.zipkin) c.service(['tracing', 'zipkin', 'service'], t.zipkin.service);
  if (t.openTelemetry) {
    const s = c.service(['tracing', 'openTelemetry', 'service'], t.openTelemetry.service);
    if (s && s.protocol !== 'grpc' && s.protocol !== 'http2')
      c.error(
        Codes.INVALID_VALUE,
        ['tracing', 'openTelemetry', 'service'],
        `OTLP is gRPC: service "${s.name}" needs protocol: grpc`,
      );
  }
  if (t.serviceName !== undefined && !t.openTelemetry)
    c.error(
      Codes.INVALID_VALUE,
      ['tracing', 'serviceName'],
      "Zipkin spans name the proxy's node cluster as the service; serviceName is for openTelemetry",
    );
  for (const [tag, from] of Object.entries(t.tags ?? {}))
    if ((from.header === undefined) === (from.literal === undefined))
      c.error(Codes.INVALID_VALUE, ['tracing', 'tags', tag], 'a tag is one of header and literal');
}
