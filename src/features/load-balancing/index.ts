/** Load balancing: how a proxy or gRPC application picks an endpoint of a service. */
import { Codes } from '../../shared/diagnostics.ts';
import { parseDurationMs } from '../../shared/duration.ts';
import { defineFeature } from '../kit/feature.ts';
import { loadBalancingFields as fields, type LoadBalancingService } from './schema.ts';
import { loadBalancingFields } from './translate.ts';

export const loadBalancing = defineFeature<unknown, unknown, unknown, LoadBalancingService, typeof fields>({
  name: 'load-balancing',
  docs: 'configuration.md#load-balancing',
  fields,
  grpc: {
    kind: 'grpc',
    rows: [
      { row: 'ringHash', uses: (s) => s.lb === 'ring_hash' },
      { row: 'leastRequest', uses: (s) => s.lb === 'least_request' },
      { row: 'weightedByLoad', uses: (s) => s.lb === 'weighted_by_load' },
    ],
  },
  checks: {
    service: (s, c) => {
      if (s.ringHash && s.lb !== 'ring_hash')
        c.error(Codes.INVALID_VALUE, ['ringHash'], 'ringHash goes with lb: ring_hash');
      if (s.panicThreshold !== undefined && s.lb === 'weighted_by_load')
        c.error(
          Codes.INVALID_VALUE,
          ['panicThreshold'],
          "lb: weighted_by_load is Envoy's load-balancing policy extension, which keeps no panic threshold",
        );
      if (s.weightedByLoad && s.lb !== 'weighted_by_load')
        c.error(Codes.INVALID_VALUE, ['weightedByLoad'], 'weightedByLoad goes with lb: weighted_by_load');
      const update = s.weightedByLoad?.weightUpdatePeriod;
      if (update !== undefined && (parseDurationMs(update) ?? 0) < 100)
        c.error(
          Codes.INVALID_VALUE,
          ['weightedByLoad', 'weightUpdatePeriod'],
          'weights are computed at most every 100ms',
        );
      const ring = s.ringHash;
      if (ring?.minSize !== undefined && ring.maxSize !== undefined && ring.minSize > ring.maxSize)
        c.error(Codes.INVALID_VALUE, ['ringHash'], 'minSize is above maxSize');
    },
  },
  cluster: (s) => loadBalancingFields(s),
});
