/** Circuit breakers: bounds on the connections, requests and retries a proxy sends a service at once. */
import { Codes } from '../../shared/diagnostics.ts';
import { compact } from '../kit/envoy-json.ts';
import { defineFeature } from '../kit/feature.ts';
import { circuitBreakerFields, type CircuitBreakerService } from './schema.ts';

export const circuitBreaker = defineFeature<
  unknown,
  unknown,
  unknown,
  CircuitBreakerService,
  typeof circuitBreakerFields
>({
  name: 'circuit-breaker',
  docs: 'configuration.md#circuit-breakers',
  fields: circuitBreakerFields,
  // gRPC honours maxRequests only (gRFC A32); the other limits are Envoy's.
  grpc: { kind: 'grpc', rows: [{ row: 'circuitBreaker', uses: (s) => s.circuitBreaker?.maxRequests !== undefined }] },
  checks: {
    // A retry budget replaces maxRetries in Envoy: both set is a mistake.
    service: (s, c) => {
      if (s.circuitBreaker?.retryBudget && s.circuitBreaker.maxRetries !== undefined)
        c.warn(
          Codes.INVALID_VALUE,
          ['circuitBreaker', 'maxRetries'],
          'Envoy ignores maxRetries when retryBudget is set',
        );
    },
  },
  cluster: (s) => {
    const cb = s.circuitBreaker;
    if (!cb) return undefined;
    return {
      circuit_breakers: {
        thresholds: [
          compact({
            max_connections: cb.maxConnections,
            max_pending_requests: cb.maxPendingRequests,
            max_requests: cb.maxRequests,
            max_retries: cb.maxRetries,
            retry_budget: cb.retryBudget && {
              budget_percent: { value: cb.retryBudget.percent },
              ...(cb.retryBudget.minConcurrent !== undefined && {
                min_retry_concurrency: cb.retryBudget.minConcurrent,
              }),
            },
          }),
        ],
      },
    };
  },
});
