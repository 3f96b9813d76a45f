import type { ServiceDoc } from '../model/schema.ts';
import { durationToProto } from '../shared/duration.ts';
import { adsConfigSource, providerInstance, TYPE } from './common.ts';
import { compact, type JsonObject } from '../features/kit/envoy-json.ts';
import { nameMatcher, sanMatchers } from '../features/protection/translate.ts';
import { clusterFeatureFields } from './features.ts';
import { ROUND_ROBIN_POLICY } from '../features/load-balancing/translate.ts';

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
  if (s.protocol === 'http2' || s.protocol === 'grpc') {
    c.typed_extension_protocol_options = {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': TYPE.httpProtocolOptions,
        explicit_http_config: { http2_protocol_options: {} },
      },
    };
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
  const features = clusterFeatureFields(s, proxyless);
  return Object.keys(features).length ? inClusterOrder({ ...c, ...features }) : c;
}

/**
 * Where each field of a Cluster goes in its JSON, so a feature's fields land where they always
 * have (the JSON is what goldens, the status API and rendered files show; the encoded bytes follow
 * the proto's own order either way).
 */
const CLUSTER_FIELD_ORDER = [
  'name',
  'type',
  'eds_cluster_config',
  'connect_timeout',
  'lb_policy',
  'load_balancing_policy',
  'ring_hash_lb_config',
  'dns_refresh_rate',
  'load_assignment',
  'common_lb_config',
  'health_checks',
  'circuit_breakers',
  'typed_extension_protocol_options',
  'outlier_detection',
  'transport_socket',
];

/** `c`'s fields in CLUSTER_FIELD_ORDER (one not listed: after those listed). */
function inClusterOrder(c: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of CLUSTER_FIELD_ORDER) if (k in c) out[k] = c[k];
  for (const k in c) if (!(k in out)) out[k] = c[k];
  return out;
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
