/** Response compression (Envoy's compressor filter with gzip, brotli and zstd). */
import { Codes } from '../../shared/diagnostics.ts';
import { defineFeature } from '../kit/feature.ts';
import { compressionFields, type CompressionListener, type CompressionOverride } from './schema.ts';
import { compressionPerFilterConfig, compressorFilters } from './translate.ts';

export const compression = defineFeature<
  CompressionListener,
  CompressionOverride,
  CompressionOverride,
  unknown,
  typeof compressionFields
>({
  name: 'compression',
  docs: 'configuration.md#response-compression',
  fields: compressionFields,
  grpc: { kind: 'envoy-only', why: 'gRPC compresses messages itself (grpc-encoding), not through xDS' },
  checks: {
    listener: (l, c) => {
      if (l.compression !== undefined && !l.virtualHosts)
        c.error(Codes.INVALID_VALUE, ['compression'], 'compression is for HTTP listeners: this one proxies TCP');
    },
  },
  http: {
    phase: 'response',
    filters: (l) => compressorFilters(l.compression),
    perFilterConfig: (o) => compressionPerFilterConfig(o),
  },
});
