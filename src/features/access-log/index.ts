/** Access logs: a line per request (HTTP) or connection (TCP), to a file, stdout/stderr or a gRPC log service. */
import { defineFeature } from '../kit/feature.ts';
import { checkAccessLogs } from './checks.ts';
import { accessLogFields, type AccessLogListener } from './schema.ts';
import { accessLogs, accessLogServices } from './translate.ts';

export const accessLog = defineFeature<AccessLogListener, unknown, unknown, unknown, typeof accessLogFields>({
  name: 'access-log',
  docs: 'configuration.md#access-logs',
  fields: accessLogFields,
  grpc: { kind: 'envoy-only', why: 'gRPC clients log through their own interceptors, not xDS' },
  checks: { listener: checkAccessLogs },
  accessLog: (l, tcp) => accessLogs(l.accessLog, l.name, tcp),
  services: (l) => accessLogServices(l.accessLog),
});
