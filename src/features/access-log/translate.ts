/**
 * A listener's access logs in Envoy's terms: file or stdout/stderr loggers with a JSON or text
 * format and their filters, for the HTTP connection manager (one line per request) and the TCP
 * proxy (one per connection). Filters that need a runtime key get one of fleetxds's that nothing
 * sets, so their default value is what applies.
 */
import { parseDurationMs } from '../../shared/duration.ts';
import { perMillion, type JsonObject } from '../kit/envoy-json.ts';
import type { AccessLogDoc } from './schema.ts';

/** What an operator debugs a request with. */
export const DEFAULT_HTTP_FIELDS: Readonly<Record<string, string>> = {
  start_time: '%START_TIME%',
  method: '%REQ(:METHOD)%',
  path: '%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%',
  authority: '%REQ(:AUTHORITY)%',
  protocol: '%PROTOCOL%',
  status: '%RESPONSE_CODE%',
  response_flags: '%RESPONSE_FLAGS%',
  route_name: '%ROUTE_NAME%',
  upstream_cluster: '%UPSTREAM_CLUSTER%',
  upstream_host: '%UPSTREAM_HOST%',
  duration_ms: '%DURATION%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  request_id: '%REQ(X-REQUEST-ID)%',
  downstream_address: '%DOWNSTREAM_REMOTE_ADDRESS%',
  user_agent: '%REQ(USER-AGENT)%',
};

/** What an operator debugs a TCP connection with. */
export const DEFAULT_TCP_FIELDS: Readonly<Record<string, string>> = {
  start_time: '%START_TIME%',
  response_flags: '%RESPONSE_FLAGS%',
  upstream_cluster: '%UPSTREAM_CLUSTER%',
  upstream_host: '%UPSTREAM_HOST%',
  duration_ms: '%DURATION%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  downstream_address: '%DOWNSTREAM_REMOTE_ADDRESS%',
  requested_server_name: '%REQUESTED_SERVER_NAME%',
};

const FILE = 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog';
const HTTP_GRPC = 'type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig';
const TCP_GRPC = 'type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.TcpGrpcAccessLogConfig';
const STDOUT = 'type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog';
const STDERR = 'type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog';

function logFormat(a: AccessLogDoc, tcp: boolean): JsonObject {
  if (a.format === 'text') return { text_format_source: { inline_string: `${a.text ?? ''}\n` } };
  return { json_format: { ...(a.fields ?? (tcp ? DEFAULT_TCP_FIELDS : DEFAULT_HTTP_FIELDS)) } };
}

/** Envoy's gRPC access log service (envoy.service.accesslog.v3) spoken to a service. */
function grpcLogger(to: { service: string; logName?: string }, key: string, tcp: boolean): JsonObject {
  return {
    name: tcp ? 'envoy.access_loggers.tcp_grpc' : 'envoy.access_loggers.http_grpc',
    typed_config: {
      '@type': tcp ? TCP_GRPC : HTTP_GRPC,
      common_config: {
        log_name: to.logName ?? key,
        grpc_service: { envoy_grpc: { cluster_name: to.service } },
        transport_api_version: 'V3',
      },
    },
  };
}

/** The services a listener's logs are sent to. */
export function accessLogServices(logs: readonly AccessLogDoc[] | undefined): string[] {
  return (logs ?? []).flatMap((a) => (typeof a.to === 'object' ? [a.to.service] : []));
}

/** `tcp`: for a TCP proxy, where a request's status does not exist (a status filter is left out). */
function filterOf(a: AccessLogDoc, key: string, tcp: boolean): JsonObject | undefined {
  const f = a.filter;
  if (!f) return undefined;
  const runtime = (what: string) => `fleetxds.access_log.${key}.${what}`;
  const compare = (op: 'GE' | 'LE', value: number, what: string) => ({
    comparison: { op, value: { default_value: value, runtime_key: runtime(what) } },
  });
  const all: JsonObject[] = [];
  if (!tcp && f.status?.min !== undefined) all.push({ status_code_filter: compare('GE', f.status.min, 'status_min') });
  if (!tcp && f.status?.max !== undefined) all.push({ status_code_filter: compare('LE', f.status.max, 'status_max') });
  if (f.minDuration !== undefined)
    all.push({ duration_filter: compare('GE', parseDurationMs(f.minDuration) ?? 0, 'min_duration') });
  if (f.notHealthCheck && !tcp) all.push({ not_health_check_filter: {} });
  if (f.samplePercent !== undefined && f.samplePercent < 100)
    all.push({
      runtime_filter: {
        runtime_key: runtime('sample'),
        percent_sampled: perMillion(f.samplePercent),
        use_independent_randomness: true,
      },
    });
  if (all.length === 0) return undefined;
  return all.length === 1 ? all[0] : { and_filter: { filters: all } };
}

/** Envoy `access_log` entries for a listener's logs; `key` names it in runtime keys. */
export function accessLogs(logs: readonly AccessLogDoc[] | undefined, key: string, tcp: boolean): JsonObject[] {
  return (logs ?? []).map((a, i) => {
    const filter = filterOf(a, `${key}.${i}`, tcp);
    if (typeof a.to === 'object') {
      const logger = grpcLogger(a.to, key, tcp);
      return filter ? { ...logger, filter } : logger;
    }
    const log_format = logFormat(a, tcp);
    const logger =
      a.to === 'stdout'
        ? { name: 'envoy.access_loggers.stdout', typed_config: { '@type': STDOUT, log_format } }
        : a.to === 'stderr'
          ? { name: 'envoy.access_loggers.stderr', typed_config: { '@type': STDERR, log_format } }
          : { name: 'envoy.access_loggers.file', typed_config: { '@type': FILE, path: a.to, log_format } };
    return filter ? { ...logger, filter } : logger;
  });
}
