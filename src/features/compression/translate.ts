/** Response compression in Envoy's terms: one compressor filter per algorithm, each off per route. */
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import { ALGORITHMS, type Algorithm, type CompressionDoc, type CompressionOverride } from './schema.ts';

const COMPRESSOR = 'type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor';
const PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute';
const filterName = (a: Algorithm) => `envoy.filters.http.compressor.${a}`;
const LIBRARY_TYPE: Record<Algorithm, string> = {
  gzip: 'type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip',
  brotli: 'type.googleapis.com/envoy.extensions.compression.brotli.compressor.v3.Brotli',
  zstd: 'type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd',
};

/** A virtual host or route with compression off: every compressor off. */
export function compressionPerFilterConfig(o: CompressionOverride): JsonObject | undefined {
  if (o.compression !== false) return undefined;
  const out: JsonObject = {};
  for (const a of ALGORITHMS) out[filterName(a)] = { '@type': PER_ROUTE, disabled: true };
  return out;
}

/** One compressor filter per algorithm the listener's compression names. */
export function compressorFilters(c: CompressionDoc | undefined): JsonObject[] {
  if (!c) return [];
  return c.algorithms.map((a) => ({
    name: filterName(a),
    typed_config: {
      '@type': COMPRESSOR,
      response_direction_config: {
        common_config: compact({ min_content_length: c.minLength, content_type: c.contentTypes }),
      },
      compressor_library: { name: a, typed_config: { '@type': LIBRARY_TYPE[a] } },
    },
  }));
}
