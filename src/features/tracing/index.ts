/** Distributed tracing: Envoy's spans to Zipkin or an OpenTelemetry collector. */
import { defineFeature } from '../kit/feature.ts';
import { checkTracing } from './checks.ts';
import { tracingFields, type TracingListener } from './schema.ts';
import { tracingConfig, tracingServices } from './translate.ts';

export const tracing = defineFeature<TracingListener, unknown, unknown, unknown, typeof tracingFields>({
  name: 'tracing',
  docs: 'configuration.md#tracing',
  fields: tracingFields,
  grpc: { kind: 'envoy-only', why: 'gRPC clients trace through their own OpenTelemetry plugin, not xDS' },
  checks: { listener: checkTracing },
  // Not a filter: a field of the connection manager, whose collector is a service.
  connectionManager: (l) => (l.tracing ? { tracing: tracingConfig(l.tracing) } : undefined),
  services: (l) => tracingServices(l.tracing),
});
