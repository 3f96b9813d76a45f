/** Outlier detection: endpoints that answer with errors are ejected for a while (Envoy and gRPC, gRFC A50). */
import { durationToProto } from '../../shared/duration.ts';
import { compact } from '../kit/envoy-json.ts';
import { defineFeature } from '../kit/feature.ts';
import { outlierDetectionFields, type OutlierDetectionService } from './schema.ts';

export const outlierDetection = defineFeature<
  unknown,
  unknown,
  unknown,
  OutlierDetectionService,
  typeof outlierDetectionFields
>({
  name: 'outlier-detection',
  docs: 'configuration.md#outlier-detection',
  fields: outlierDetectionFields,
  // gRPC clients eject on success rate and failure percentage; consecutive errors are Envoy's.
  grpc: {
    kind: 'grpc',
    rows: [
      {
        row: 'outlierDetection',
        uses: (s) => !!(s.outlierDetection?.successRate || s.outlierDetection?.failurePercentage),
      },
    ],
  },
  cluster: (s) => {
    const o = s.outlierDetection;
    if (!o) return undefined;
    return {
      outlier_detection: compact({
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
        // Only the ejections the operator lists: Envoy (and gRPC, gRFC A50) would otherwise also eject
        // on success rate by default. 0 is the proto default, so it is written as an explicit value.
        enforcing_success_rate: o.successRate ? (o.successRate.enforcingPercent ?? 100) : 0,
        failure_percentage_threshold: o.failurePercentage?.threshold,
        failure_percentage_minimum_hosts: o.failurePercentage?.minimumHosts,
        failure_percentage_request_volume: o.failurePercentage?.requestVolume,
        enforcing_failure_percentage: o.failurePercentage ? (o.failurePercentage.enforcingPercent ?? 100) : undefined,
      }),
    };
  },
});
