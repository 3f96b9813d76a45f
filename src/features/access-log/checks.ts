/**
 * Access log rules a schema cannot express: a destination Envoy can write, one format with what it
 * takes, format operators Envoy parses, and filters that fit what is logged.
 */
import { Codes, type PathSegment } from '../../shared/diagnostics.ts';
import type { FeatureCheck } from '../kit/feature.ts';
import { badOperators } from '../kit/format-operators.ts';
import type { AccessLogDoc, AccessLogListener } from './schema.ts';

export function checkAccessLogs(l: AccessLogListener, c: FeatureCheck): void {
  l.accessLog?.forEach((a, i) => checkAccessLog(a, ['accessLog', i], !!l.tcp, c));
}

function checkAccessLog(a: AccessLogDoc, path: readonly PathSegment[], tcp: boolean, c: FeatureCheck): void {
  if (typeof a.to === 'object') {
    const s = c.service([...path, 'to', 'service'], a.to.service);
    if (s && s.protocol !== 'grpc' && s.protocol !== 'http2')
      c.error(
        Codes.INVALID_VALUE,
        [...path, 'to', 'service'],
        `the access log service protocol is gRPC: service "${s.name}" needs protocol: grpc`,
      );
    for (const k of ['format', 'fields', 'text'] as const)
      if (a[k] !== undefined)
        c.error(Codes.INVALID_VALUE, [...path, k], 'a gRPC access log service gets every field, structured');
  } else if (a.to !== 'stdout' && a.to !== 'stderr' && !a.to.startsWith('/'))
    c.error(Codes.INVALID_VALUE, [...path, 'to'], `"${a.to}" is not stdout, stderr or an absolute file path`);
  const format = a.format ?? 'json';
  if (format === 'text' && a.text === undefined)
    c.error(Codes.INVALID_VALUE, [...path, 'text'], 'format text needs the line to write (text)');
  if (format === 'json' && a.text !== undefined)
    c.error(Codes.INVALID_VALUE, [...path, 'text'], 'text goes with format: text (json takes fields)');
  if (format === 'text' && a.fields !== undefined)
    c.error(Codes.INVALID_VALUE, [...path, 'fields'], 'fields go with format: json (text takes text)');
  const formats: [readonly PathSegment[], string][] = [
    ...(a.text !== undefined ? [[[...path, 'text'], a.text] as [readonly PathSegment[], string]] : []),
    ...Object.entries(a.fields ?? {}).map(([k, v]) => [[...path, 'fields', k], v] as [readonly PathSegment[], string]),
  ];
  for (const [at, f] of formats)
    for (const bad of badOperators(f))
      c.error(Codes.INVALID_VALUE, at, `"${bad}" is not an Envoy format operator (%NAME%, %NAME(arg)%, %NAME:len%)`);
  const status = a.filter?.status;
  if (status?.min !== undefined && status.max !== undefined && status.min > status.max)
    c.error(Codes.INVALID_VALUE, [...path, 'filter', 'status'], `min ${status.min} is above max ${status.max}`);
  if (tcp && (status || a.filter?.notHealthCheck))
    c.error(
      Codes.INVALID_VALUE,
      [...path, 'filter'],
      'a TCP listener logs connections: they have no status and are no health checks',
    );
}
