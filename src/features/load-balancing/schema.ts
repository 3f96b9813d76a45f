/**
 * Load balancing in the YAML model: a service's policy (round robin, least request, ring hash,
 * maglev, random, weighted by reported load), its settings, and Envoy's panic threshold.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, strict } from '../kit/schema-primitives.ts';

export const LB_POLICIES = [
  'round_robin',
  'least_request',
  'ring_hash',
  'maglev',
  'random',
  'weighted_by_load',
] as const;
export type LbPolicy = (typeof LB_POLICIES)[number];

export const loadBalancingFields = {
  service: {
    lb: Type.Optional(
      Enum(
        LB_POLICIES,
        "Load-balancing policy (default round_robin); ring_hash and maglev follow the routes' hashPolicy; " +
          'weighted_by_load weighs each endpoint by the load it reports (ORCA: requests per second over CPU ' +
          'utilization; Envoy and gRPC clients, gRFC A58), round robin for clients without it.',
      ),
    ),
    weightedByLoad: Type.Optional(
      Type.Object(
        {
          blackoutPeriod: Type.Optional({
            ...Duration,
            description:
              'An endpoint reports this long before its weight is used (default 10s; gRPC-Go reads 0s as that ' +
              'default).',
          }),
          weightUpdatePeriod: Type.Optional({
            ...Duration,
            description: 'How often weights are computed again (default 1s; at least 100ms).',
          }),
          weightExpirationPeriod: Type.Optional({
            ...Duration,
            description: 'A weight without a report for this long is dropped (default 3m).',
          }),
          errorPenalty: Type.Optional(
            Type.Number({
              minimum: 0,
              maximum: 1000,
              description: 'How much failed requests weigh against an endpoint (default 1).',
            }),
          ),
        },
        { ...strict, description: 'lb weighted_by_load: how reports become weights.' },
      ),
    ),
    ringHash: Type.Optional(
      Type.Object(
        {
          minSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 8388608 })),
          maxSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 8388608 })),
        },
        { ...strict, description: 'lb ring_hash: the ring size bounds.' },
      ),
    ),
    panicThreshold: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 100,
        description:
          "Envoy's panic threshold, in percent (Envoy's default 50): with fewer endpoints healthy than this " +
          'share, Envoy sends to every endpoint, healthy or not, rather than overload the few left. 0 turns ' +
          'it off (no healthy endpoint: 503). Envoy only; gRPC clients never send to unhealthy endpoints.',
      }),
    ),
  },
} as const;

export type WeightedByLoadDoc = Static<(typeof loadBalancingFields.service)['weightedByLoad']>;
export type RingHashDoc = Static<(typeof loadBalancingFields.service)['ringHash']>;

/** What load balancing reads of a service. */
export interface LoadBalancingService {
  readonly lb?: LbPolicy;
  readonly weightedByLoad?: WeightedByLoadDoc;
  readonly ringHash?: RingHashDoc;
  readonly panicThreshold?: number;
}
