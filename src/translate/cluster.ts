import type { ServiceDoc } from '../model/schema.ts';
import { durationToProto } from '../shared/duration.ts';
import { adsConfigSource, providerInstance, TYPE } from './common.ts';
import { compact, type JsonObject } from '../features/kit/envoy-json.ts';
import { nameMatcher, sanMatchers } from '../features/protection/translate.ts';

const LB_POLICY: Record<NonNullable<ServiceDoc['lb']>, string | undefined> = {
  round_robin: undefined, // proto default
  least_request: 'LEAST_REQUEST',
  ring_hash: 'RING_HASH',
  maglev: 'MAGLEV',
  random: 'RANDOM',
  weighted_by_load: undefined, // load_balancing_policy (weightedByLoadPolicy)
};

export const DEFAULT_CONNECT_TIMEOUT = '5s';

/**
 * Service -> Cluster. Static endpoints become an EDS cluster fed over ADS (so endpoint changes never
 * touch CDS). `proxyless`: for a node group of gRPC applications, whose TLS comes from their own
 * certificate providers (gRFC A29), not SDS.
 */
export function buildCluster(s: ServiceDoc, proxyless = false): JsonObject {
  if (s.aggregate) return aggregateCluster(s.name, s.aggregate);
  const c: JsonObject = { name: s.name };
  if (s.dns) {
    c.type = s.dns.mode === 'logical' ? 'LOGICAL_DNS' : 'STRICT_DNS';
  } else {
    c.type = 'EDS';
    c.eds_cluster_config = { eds_config: adsConfigSource() };
  }
  c.connect_timeout = durationToProto(s.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT);
  const lb = LB_POLICY[s.lb ?? 'round_robin'];
  if (lb) c.lb_policy = lb;
  if (s.lb === 'weighted_by_load') c.load_balancing_policy = weightedByLoadPolicy(s.weightedByLoad ?? {});
  if (s.ringHash)
    c.ring_hash_lb_config = compact({
      minimum_ring_size: s.ringHash.minSize?.toString(),
      maximum_ring_size: s.ringHash.maxSize?.toString(),
    });
  if (s.dns) {
    if (s.dns.refreshRate) c.dns_refresh_rate = durationToProto(s.dns.refreshRate);
    c.load_assignment = {
      cluster_name: s.name,
      endpoints: [
        {
          lb_endpoints: [
            { endpoint: { address: { socket_address: { address: s.dns.host, port_value: s.dns.port } } } },
          ],
        },
      ],
    };
  }
  if (s.panicThreshold !== undefined) c.common_lb_config = { healthy_panic_threshold: { value: s.panicThreshold } };
  if (s.healthCheck) c.health_checks = [healthCheck(s.healthCheck)];
  if (s.circuitBreaker) {
    const cb = s.circuitBreaker;
    c.circuit_breakers = {
      thresholds: [
        compact({
          max_connections: cb.maxConnections,
          max_pending_requests: cb.maxPendingRequests,
          max_requests: cb.maxRequests,
          max_retries: cb.maxRetries,
          retry_budget: cb.retryBudget && {
            budget_percent: { value: cb.retryBudget.percent },
            ...(cb.retryBudget.minConcurrent !== undefined && { min_retry_concurrency: cb.retryBudget.minConcurrent }),
          },
        }),
      ],
    };
  }
  if (s.protocol === 'http2' || s.protocol === 'grpc') {
    c.typed_extension_protocol_options = {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': TYPE.httpProtocolOptions,
        explicit_http_config: { http2_protocol_options: {} },
      },
    };
  }
  if (s.outlierDetection) {
    const o = s.outlierDetection;
    c.outlier_detection = compact({
      consecutive_5xx: o.consecutive5xx,
      interval: o.interval && durationToProto(o.interval),
      base_ejection_time: o.baseEjectionTime && durationToProto(o.baseEjectionTime),
      max_ejection_percent: o.maxEjectionPercent,
      consecutive_gateway_failure: o.consecutiveGatewayFailure,
      max_ejection_time: o.maxEjectionTime && durationToProto(o.maxEjectionTime),
      // Envoy takes the factor in thousandths.
      success_rate_stdev_factor:
        o.successRate?.stdevFactor === undefined ? undefined : Math.round(o.successRate.stdevFactor * 1000),
      success_rate_minimum_hosts: o.successRate?.minimumHosts,
      success_rate_request_volume: o.successRate?.requestVolume,
      // Only the ejections the operator lists: Envoy (and gRPC, gRFC A50) would otherwise also eject on
      // success rate by default. 0 is the proto default, so it is written as an explicit wrapper value.
      enforcing_success_rate: o.successRate ? (o.successRate.enforcingPercent ?? 100) : 0,
      failure_percentage_threshold: o.failurePercentage?.threshold,
      failure_percentage_minimum_hosts: o.failurePercentage?.minimumHosts,
      failure_percentage_request_volume: o.failurePercentage?.requestVolume,
      enforcing_failure_percentage: o.failurePercentage ? (o.failurePercentage.enforcingPercent ?? 100) : undefined,
    });
  }
  if (s.tls && proxyless) c.transport_socket = providerTls(s.tls);
  else if (s.tls) {
    const ctx: JsonObject = {};
    if (s.tls.clientSecret)
      ctx.tls_certificate_sds_secret_configs = [{ name: s.tls.clientSecret, sds_config: adsConfigSource() }];
    const sans = s.tls.subjectAltNames && { match_typed_subject_alt_names: sanMatchers(s.tls.subjectAltNames) };
    if (s.tls.caFile) ctx.validation_context = { trusted_ca: { filename: s.tls.caFile }, ...sans };
    else if (s.tls.caSecret && sans)
      // The CA comes over SDS; the names to check are merged into it.
      ctx.combined_validation_context = {
        default_validation_context: sans,
        validation_context_sds_secret_config: { name: s.tls.caSecret, sds_config: adsConfigSource() },
      };
    else if (s.tls.caSecret)
      ctx.validation_context_sds_secret_config = { name: s.tls.caSecret, sds_config: adsConfigSource() };
    c.transport_socket = {
      name: 'envoy.transport_sockets.tls',
      typed_config: compact({ '@type': TYPE.upstreamTls, common_tls_context: ctx, sni: s.tls.sni }),
    };
  }
  return c;
}

/**
 * Upstream TLS for gRPC applications: the certificates of the instances named after the Secrets,
 * and the names the upstream must carry as gRPC reads them (match_subject_alt_names, any SAN type).
 */
function providerTls(tls: NonNullable<ServiceDoc['tls']>): JsonObject {
  const ctx: JsonObject = {};
  if (tls.clientSecret) ctx.tls_certificate_provider_instance = providerInstance(tls.clientSecret);
  if (tls.caSecret)
    ctx.validation_context = compact({
      ca_certificate_provider_instance: providerInstance(tls.caSecret),
      match_subject_alt_names: tls.subjectAltNames?.map(nameMatcher),
    });
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: compact({ '@type': TYPE.upstreamTls, common_tls_context: ctx, sni: tls.sni }),
  };
}

const ROUND_ROBIN_POLICY = {
  typed_extension_config: { name: 'round_robin', typed_config: { '@type': TYPE.roundRobinLb } },
};

/**
 * Client-side weighted round robin (ORCA load reports), then round robin: Envoy and gRPC clients
 * take the first policy of the list they implement, so a client without it balances round robin
 * rather than refusing the cluster.
 */
function weightedByLoadPolicy(w: NonNullable<ServiceDoc['weightedByLoad']>): JsonObject {
  const config = compact({
    '@type': TYPE.clientSideWrrLb,
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

/**
 * Priority failover across other clusters: the first with healthy endpoints takes the traffic.
 * Envoy wants the cluster-provided balancer for it, which gRPC does not know: each takes the first
 * policy of the list it implements (gRPC then ignores the balancer of an aggregate, gRFC A37).
 */
function aggregateCluster(name: string, members: readonly string[]): JsonObject {
  return {
    name,
    connect_timeout: durationToProto(DEFAULT_CONNECT_TIMEOUT),
    load_balancing_policy: {
      policies: [
        { typed_extension_config: { name: 'cluster_provided', typed_config: { '@type': TYPE.clusterProvidedLb } } },
        ROUND_ROBIN_POLICY,
      ],
    },
    cluster_type: {
      name: 'envoy.clusters.aggregate',
      typed_config: { '@type': TYPE.aggregateCluster, clusters: members },
    },
  };
}

function healthCheck(hc: NonNullable<ServiceDoc['healthCheck']>): JsonObject {
  const out: JsonObject = {
    timeout: durationToProto(hc.timeout ?? '1s'),
    interval: durationToProto(hc.interval ?? '10s'),
    unhealthy_threshold: hc.unhealthyThreshold ?? 3,
    healthy_threshold: hc.healthyThreshold ?? 2,
  };
  if (hc.type === 'http') out.http_health_check = compact({ host: hc.host, path: hc.path });
  else if (hc.type === 'grpc')
    out.grpc_health_check = compact({ service_name: hc.serviceName || undefined, authority: hc.host });
  else out.tcp_health_check = {};
  return out;
}
