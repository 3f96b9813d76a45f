/** An HTTP listener's connection-manager settings in Envoy's terms (fields of HttpConnectionManager). */
import { durationToProto } from '../../shared/duration.ts';
import { compact, type JsonObject } from '../kit/envoy-json.ts';
import type { HttpSettingsDoc } from './schema.ts';

const ESCAPED_SLASHES: Record<NonNullable<HttpSettingsDoc['escapedSlashes']>, string> = {
  keep: 'KEEP_UNCHANGED',
  reject: 'REJECT_REQUEST',
  'unescape-and-redirect': 'UNESCAPE_AND_REDIRECT',
  'unescape-and-forward': 'UNESCAPE_AND_FORWARD',
};

/** OVERWRITE is the enum's zero value: canonical JSON leaves it out. */
const SERVER_HEADER: Record<NonNullable<HttpSettingsDoc['serverHeader']>, string | undefined> = {
  overwrite: undefined,
  'append-if-absent': 'APPEND_IF_ABSENT',
  'pass-through': 'PASS_THROUGH',
};

const duration = (d: string | undefined) => (d === undefined ? undefined : durationToProto(d));

/** The fields to spread into the HttpConnectionManager. */
export function httpSettingsFields(h: HttpSettingsDoc | undefined): JsonObject {
  if (!h) return {};
  return compact({
    use_remote_address: h.useRemoteAddress,
    xff_num_trusted_hops: h.xffNumTrustedHops || undefined,
    common_http_protocol_options: h.idleTimeout !== undefined ? { idle_timeout: duration(h.idleTimeout) } : undefined,
    stream_idle_timeout: duration(h.streamIdleTimeout),
    request_headers_timeout: duration(h.requestHeadersTimeout),
    request_timeout: duration(h.requestTimeout),
    max_request_headers_kb: h.maxRequestHeadersKb,
    normalize_path: h.normalizePath,
    merge_slashes: h.mergeSlashes || undefined,
    path_with_escaped_slashes_action: h.escapedSlashes && ESCAPED_SLASHES[h.escapedSlashes],
    server_name: h.serverName,
    server_header_transformation: h.serverHeader && SERVER_HEADER[h.serverHeader],
    generate_request_id: h.generateRequestId,
    preserve_external_request_id: h.preserveRequestId || undefined,
    http2_protocol_options:
      h.http2 &&
      compact({
        max_concurrent_streams: h.http2.maxConcurrentStreams,
        initial_stream_window_size: h.http2.initialStreamWindowSize,
        initial_connection_window_size: h.http2.initialConnectionWindowSize,
      }),
    http_protocol_options: h.http1?.properCaseHeaders ? { header_key_format: { proper_case_words: {} } } : undefined,
  });
}
