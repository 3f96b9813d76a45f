/** Active health checks: Envoy probes each endpoint (HTTP, gRPC health, TCP) and sends only to healthy ones. */
import { durationToProto } from '../../shared/duration.ts';
import { Codes } from '../../shared/diagnostics.ts';
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import { defineFeature } from '../kit/feature.ts';
import { healthCheckFields, type HealthCheckDoc, type HealthCheckService } from './schema.ts';

function healthCheckConfig(hc: HealthCheckDoc): JsonObject {
  const out: JsonObject = {
    timeout: durationToProto(hc.timeout ?? '1s'),
    interval: durationToProto(hc.interval ?? '10s'),
    unhealthy_threshold: hc.unhealthyThreshold ?? 3,
    healthy_threshold: hc.healthyThreshold ?? 2,
  };
  if (hc.noTrafficInterval) out.no_traffic_interval = durationToProto(hc.noTrafficInterval);
  if (hc.type === 'http') out.http_health_check = compact({ host: hc.host, path: hc.path });
  else if (hc.type === 'grpc')
    out.grpc_health_check = compact({ service_name: hc.serviceName || undefined, authority: hc.host });
  else out.tcp_health_check = {};
  return out;
}

export const healthCheck = defineFeature<unknown, unknown, unknown, HealthCheckService, typeof healthCheckFields>({
  name: 'health-check',
  docs: 'configuration.md#health-checks',
  fields: healthCheckFields,
  grpc: { kind: 'envoy-only', why: 'gRPC clients take health from the EDS health status the server sends, not probes' },
  checks: {
    service: (s, c) => {
      const hc = s.healthCheck;
      if (!hc) return;
      if (hc.type === 'http' && !hc.path)
        c.error(Codes.INVALID_VALUE, ['healthCheck'], 'an http health check needs `path`');
      if (hc.type !== 'http' && hc.path)
        c.error(Codes.INVALID_VALUE, ['healthCheck', 'path'], `\`path\` applies to http checks, not ${hc.type}`);
      if (hc.type !== 'grpc' && hc.serviceName !== undefined)
        c.error(Codes.INVALID_VALUE, ['healthCheck', 'serviceName'], '`serviceName` applies to grpc checks only');
    },
  },
  cluster: (s) => (s.healthCheck ? { health_checks: [healthCheckConfig(s.healthCheck)] } : undefined),
});
