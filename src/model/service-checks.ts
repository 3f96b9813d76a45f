/** Checks of a Service document alone: its settings, its registration policy, what aggregates refuse. */
import { isIP } from 'node:net';
import { parseDurationMs } from '../shared/duration.ts';
import { Codes } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef } from './diagnostic-sink.ts';
import type { ServiceDoc } from './schema.ts';
import { cidrRange, parseHostPort } from '../shared/addresses.ts';
import { checkNameMatch } from '../features/protection/checks.ts';
import { featureCheck } from './feature-checks.ts';
import { SERVICE_FIELDS } from '../features/registry.ts';

/** Registration needs a way to authenticate, addresses that parse, and times Envoy can act on. */
function checkRegistration(s: ServiceDoc, r: DocRef, sink: DiagnosticSink): void {
  const g = s.registration!;
  if (!g.identities && !g.tokens)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['registration'],
      'registration needs identities (client certificates) or tokens: anyone could add endpoints otherwise',
    );
  g.addresses?.forEach((c, i) => {
    if (!cidrRange(c))
      sink.error(Codes.INVALID_VALUE, r, ['registration', 'addresses', i], `"${c}" is not a CIDR block`);
  });
  for (const k of ['ttl', 'drain'] as const)
    if (g[k] !== undefined && (parseDurationMs(g[k]) ?? 0) < 1000)
      sink.error(Codes.INVALID_VALUE, r, ['registration', k], 'at least 1s');
}

/** What an aggregate service cannot have: it only orders other services, which have these (and features' fields). */
const NOT_ON_AGGREGATES = [
  'endpoints',
  'dns',
  'registration',
  'tls',
  'protocol',
  'connectTimeout',
  ...(Object.keys(SERVICE_FIELDS) as (keyof ServiceDoc)[]),
] as const;

export function checkService(s: ServiceDoc, r: DocRef, sink: DiagnosticSink): void {
  if (s.aggregate)
    for (const k of NOT_ON_AGGREGATES)
      if (s[k] !== undefined)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          [k],
          `an aggregate service only orders other services: \`${k}\` belongs on its members`,
        );
  if (s.dns && (s.endpoints !== undefined || s.registration))
    sink.error(
      Codes.INVALID_VALUE,
      r,
      [],
      s.registration ? 'a dns service cannot take registered endpoints' : 'use either `endpoints` or `dns`, not both',
    );
  else if (!s.dns && s.endpoints === undefined && !s.registration && !s.aggregate)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      [],
      'a service needs `endpoints` (static IPs), `dns` (a host name), `registration` (endpoints at run time) ' +
        'or `aggregate` (other services, in order)',
    );
  if (s.registration) checkRegistration(s, r, sink);
  const seen = new Map<string, number>();
  const priorities = new Set<number>();
  (s.endpoints ?? []).forEach((e, i) => {
    const hp = parseHostPort(e.address);
    if (!hp) {
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['endpoints', i, 'address'],
        `"${e.address}" is not IP:port (IPv6 as [addr]:port)`,
      );
    } else if (!isIP(hp.host)) {
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['endpoints', i, 'address'],
        `"${hp.host}" is a host name; static endpoints must be IP addresses ` +
          `(use \`dns: {host: ${hp.host}, port: ${hp.port}}\` for DNS resolution)`,
      );
    }
    const prev = seen.get(e.address);
    if (prev !== undefined)
      sink.error(Codes.CONFLICT, r, ['endpoints', i, 'address'], `duplicate endpoint (also endpoints[${prev}])`);
    seen.set(e.address, i);
    priorities.add(e.priority ?? 0);
  });
  const maxP = Math.max(-1, ...priorities);
  for (let p = 0; p <= maxP; p++) {
    if (!priorities.has(p)) {
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['endpoints'],
        `priorities must be contiguous from 0: priority ${maxP} is used but ${p} is not`,
      );
      break;
    }
  }
  if (s.tls?.caFile && !s.tls.caFile.startsWith('/'))
    sink.error(Codes.INVALID_VALUE, r, ['tls', 'caFile'], 'caFile is a path on the proxy host and must be absolute');
}

/** Upstream identity: the names checked need a CA to check them with; TLS without them is warned. */
export function checkUpstreamNames(s: ServiceDoc, r: DocRef, sink: DiagnosticSink): void {
  if (!s.tls) return;
  const c = featureCheck(r, sink);
  s.tls.subjectAltNames?.forEach((m, i) => checkNameMatch(m, ['tls', 'subjectAltNames', i], c));
  if (s.tls.subjectAltNames && !s.tls.caFile && !s.tls.caSecret)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['tls', 'subjectAltNames'],
      'names are checked on a certificate the CA verified: set caFile or caSecret',
    );
  else if (!s.tls.caFile && !s.tls.caSecret)
    sink.warn(
      Codes.INVALID_VALUE,
      r,
      ['tls'],
      "the upstream's certificate is not verified: set caFile or caSecret, and subjectAltNames",
    );
  else if (!s.tls.subjectAltNames)
    sink.warn(
      Codes.INVALID_VALUE,
      r,
      ['tls'],
      'no subjectAltNames: any certificate the CA ever signed is accepted as this service',
    );
}
