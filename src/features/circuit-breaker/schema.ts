/** Circuit breakers in the YAML model: how much a proxy sends a service at once. */
import { Type, type Static } from '@sinclair/typebox';
import { PositiveInt, strict } from '../kit/schema-primitives.ts';

export const CircuitBreaker = Type.Object(
  {
    maxConnections: Type.Optional(PositiveInt),
    maxPendingRequests: Type.Optional(PositiveInt),
    maxRequests: Type.Optional(PositiveInt),
    maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295 })),
    retryBudget: Type.Optional(
      Type.Object(
        {
          percent: Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'Of active requests (20).' }),
          minConcurrent: Type.Optional(Type.Integer({ minimum: 0, maximum: 4294967295, description: 'Default 3.' })),
        },
        { ...strict, description: 'Retries at once as a share of active requests (instead of maxRetries).' },
      ),
    ),
  },
  strict,
);

export type CircuitBreakerDoc = Static<typeof CircuitBreaker>;

export const circuitBreakerFields = { service: { circuitBreaker: Type.Optional(CircuitBreaker) } } as const;

export interface CircuitBreakerService {
  readonly circuitBreaker?: CircuitBreakerDoc;
}
