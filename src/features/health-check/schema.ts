/** Active health checks in the YAML model: how Envoy probes a service's endpoints. */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, NonEmpty, PositiveInt, strict } from '../kit/schema-primitives.ts';

export const HealthCheck = Type.Object(
  {
    type: Enum(['http', 'grpc', 'tcp'] as const),
    path: Type.Optional(Type.String({ pattern: '^/', description: 'HTTP path (http checks only).' })),
    host: Type.Optional(NonEmpty),
    serviceName: Type.Optional(Type.String({ description: 'gRPC health service name (grpc checks only).' })),
    interval: Type.Optional(Duration),
    noTrafficInterval: Type.Optional({
      ...Duration,
      description:
        "How often endpoints are probed while the service has not yet taken traffic (Envoy's default 60s, " +
        'which also delays the first probe after that): lower it for a service on standby, such as the far ' +
        'zone of a failover, to be known healthy or not before it is needed.',
    }),
    timeout: Type.Optional(Duration),
    healthyThreshold: Type.Optional(PositiveInt),
    unhealthyThreshold: Type.Optional(PositiveInt),
  },
  strict,
);

export type HealthCheckDoc = Static<typeof HealthCheck>;

export const healthCheckFields = { service: { healthCheck: Type.Optional(HealthCheck) } } as const;

export interface HealthCheckService {
  readonly healthCheck?: HealthCheckDoc;
}
