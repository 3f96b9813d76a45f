/**
 * Locality: traffic stays near its caller (failover by distance, computed per calling locality) or
 * is shared by operator weights between localities. Envoy and gRPC clients alike (gRFC A27: both
 * read EDS priorities and locality weights).
 */
import { defineFeature } from '../kit/feature.ts';
import { checkLocality } from './checks.ts';
import { localityFields as fields, type LocalityService } from './schema.ts';
import { localityCluster, weighLocalities } from './translate.ts';

export const locality = defineFeature<unknown, unknown, unknown, LocalityService, typeof fields>({
  name: 'locality',
  docs: 'locality.md#locality-per-service',
  fields,
  // Priorities and locality weights are part of every xDS gRPC client's EDS support (gRFC A27).
  grpc: { kind: 'grpc', rows: [] },
  checks: { service: checkLocality },
  cluster: (s) => localityCluster(s),
  loadAssignment: weighLocalities,
});
