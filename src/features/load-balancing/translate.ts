/** Load balancing in Envoy's terms: a Cluster's lb_policy or load_balancing_policy, ring size, panic threshold. */
import { durationToProto } from '../../shared/duration.ts';
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import type { LbPolicy, LoadBalancingService, WeightedByLoadDoc } from './schema.ts';

const ROUND_ROBIN = 'type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin';
const CLIENT_SIDE_WRR =
  'type.googleapis.com/envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.' +
  'ClientSideWeightedRoundRobin';

const LB_POLICY: Record<LbPolicy, string | undefined> = {
  round_robin: undefined, // proto default
  least_request: 'LEAST_REQUEST',
  ring_hash: 'RING_HASH',
  maglev: 'MAGLEV',
  random: 'RANDOM',
  weighted_by_load: undefined, // load_balancing_policy (weightedByLoadPolicy)
};

/** Round robin as a load_balancing_policy entry: the policy of last resort in a list of them. */
export const ROUND_ROBIN_POLICY = {
  typed_extension_config: { name: 'round_robin', typed_config: { '@type': ROUND_ROBIN } },
};

/**
 * Client-side weighted round robin (ORCA load reports), then round robin: Envoy and gRPC clients
 * take the first policy of the list they implement, so a client without it balances round robin
 * rather than refusing the cluster.
 */
function weightedByLoadPolicy(w: WeightedByLoadDoc): JsonObject {
  const config = compact({
    '@type': CLIENT_SIDE_WRR,
    blackout_period: w.blackoutPeriod && durationToProto(w.blackoutPeriod),
    weight_update_period: w.weightUpdatePeriod && durationToProto(w.weightUpdatePeriod),
    weight_expiration_period: w.weightExpirationPeriod && durationToProto(w.weightExpirationPeriod),
    error_utilization_penalty: w.errorPenalty,
  });
  return {
    policies: [
      { typed_extension_config: { name: 'client_side_weighted_round_robin', typed_config: config } },
      ROUND_ROBIN_POLICY,
    ],
  };
}

/** The Cluster's balancing fields (none for Envoy's defaults). */
export function loadBalancingFields(s: LoadBalancingService): JsonObject | undefined {
  const lb = LB_POLICY[s.lb ?? 'round_robin'];
  const out = compact({
    lb_policy: lb,
    load_balancing_policy: s.lb === 'weighted_by_load' ? weightedByLoadPolicy(s.weightedByLoad ?? {}) : undefined,
    ring_hash_lb_config:
      s.ringHash &&
      compact({
        minimum_ring_size: s.ringHash.minSize?.toString(),
        maximum_ring_size: s.ringHash.maxSize?.toString(),
      }),
    common_lb_config:
      s.panicThreshold === undefined ? undefined : { healthy_panic_threshold: { value: s.panicThreshold } },
  });
  return Object.keys(out).length ? out : undefined;
}
