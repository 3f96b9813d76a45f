/**
 * What proxyless gRPC applications need beyond the schema: xDS-enabled servers that bind an IP
 * each once per group, with access rules that can match, and TLS from certificate providers for
 * the services gRPC clients call (gRFC A29) in node groups of their own.
 */
import { isIP } from 'node:net';
import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef } from './diagnostic-sink.ts';
import { checkCidrs, checkNameMatch } from '../features/protection/checks.ts';
import { featureCheck } from './feature-checks.ts';
import type { GrpcAccessRuleDoc, GrpcServerDoc, GrpcServiceDoc, HeaderMatchDoc, ServiceDoc } from './schema.ts';
import { connectedServices, isProxylessGroup, listenerGroups, routeTargets, type Model } from './types.ts';

export interface GrpcCheckContext {
  ref(kind: string, name: string): DocRef;
  needGroups(r: DocRef, groups: string[] | undefined): void;
  needSecret(r: DocRef, path: PathSegment[], name: string, want: 'ca' | 'certificate'): void;
  checkHeader(h: HeaderMatchDoc, path: PathSegment[], r: DocRef): void;
  service(name: string): ServiceDoc | undefined;
}

export function checkGrpcServers(model: Model, sink: DiagnosticSink, cx: GrpcCheckContext): void {
  const bound = new Map<string, string>();
  for (const s of model.grpcServers ?? []) {
    const r = cx.ref('GrpcServer', s.name);
    cx.needGroups(r, s.groups);
    if (s.address !== undefined && !isIP(s.address))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['address'],
        `"${s.address}" is not an IP address: a gRPC server names the address it binds, IP:port`,
      );
    for (const g of listenerGroups(s)) {
      const key = `${g}\u0000${s.address ?? '0.0.0.0'}:${s.port}`;
      const prev = bound.get(key);
      if (prev !== undefined)
        sink.error(
          Codes.CONFLICT,
          r,
          ['port'],
          `GrpcServer "${prev}" already binds ${s.address ?? '0.0.0.0'}:${s.port} in node group "${g}"`,
        );
      else bound.set(key, s.name);
    }
    if (s.tls) {
      cx.needSecret(r, ['tls', 'secret'], s.tls.secret, 'certificate');
      if (s.tls.clientCa !== undefined) cx.needSecret(r, ['tls', 'clientCa'], s.tls.clientCa, 'ca');
    }
    checkAccessRules(s, r, sink, cx);
  }
}

function checkAccessRules(s: GrpcServerDoc, r: DocRef, sink: DiagnosticSink, cx: GrpcCheckContext): void {
  const c = featureCheck(r, sink);
  if (s.access && !s.access.allow && !s.access.deny)
    sink.error(Codes.INVALID_VALUE, r, ['access'], 'access needs allow, deny or both');
  for (const list of ['deny', 'allow'] as const) {
    const names = new Set<string>();
    s.access?.[list]?.forEach((rule: GrpcAccessRuleDoc, i) => {
      const path: PathSegment[] = ['access', list, i];
      if (!rule.principals && !rule.addresses && !rule.methods && !rule.headers)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          path,
          'a rule needs at least one of principals, addresses, methods, headers (an empty rule matches every RPC)',
        );
      if (rule.name !== undefined) {
        if (names.has(rule.name))
          sink.error(Codes.CONFLICT, r, [...path, 'name'], `another ${list} rule is named "${rule.name}"`);
        names.add(rule.name);
      }
      rule.principals?.forEach((p, j) => checkNameMatch(p, [...path, 'principals', j], c));
      if (rule.principals && !s.tls?.clientCa)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          [...path, 'principals'],
          'principals are client certificate names: without tls.clientCa no client presents one',
        );
      checkCidrs(rule.addresses, [...path, 'addresses'], c);
      rule.headers?.forEach((h, j) => cx.checkHeader(h, [...path, 'headers', j], r));
    });
  }
}

/**
 * The services gRPC clients call, an aggregate's members included: their TLS comes from
 * certificate providers, so a node group mixing Envoy (SDS) and gRPC clients cannot carry one
 * cluster for both, and the CA must be a provider (a Secret), not a file path Envoy reads.
 */
export function checkGrpcTargets(
  g: GrpcServiceDoc,
  targets: readonly string[],
  model: Model,
  sink: DiagnosticSink,
  cx: GrpcCheckContext,
): void {
  const r = cx.ref('GrpcService', g.name);
  const mixed = listenerGroups(g).filter((group) => !isProxylessGroup(model, group));
  for (const target of new Set(targets)) {
    const at = g.routes.findIndex((route) => routeTargets(route).includes(target));
    const path: PathSegment[] = ['routes', Math.max(at, 0)];
    const t = cx.service(target);
    // An aggregate's members are what the clients connect to (a route's own targets' DNS is
    // checked with the route).
    for (const s of t ? connectedServices(model, t) : []) checkTarget(s, path, s !== t);
  }
  function checkTarget(s: ServiceDoc, path: PathSegment[], member: boolean): void {
    const name = s.name;
    if (member && s.dns && s.dns.mode !== 'logical')
      sink.error(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${name}" (a member of an aggregate) uses strict DNS, which proxyless gRPC clients do not ` +
          'resolve: give it `dns.mode: logical` or static endpoints',
      );
    const tls = s.tls;
    if (!tls) return;
    if (mixed.length)
      sink.error(
        Codes.CONFLICT,
        r,
        path,
        `service "${name}" has TLS, and node group "${mixed[0]}" also carries Envoy listeners: Envoy takes ` +
          'certificates over SDS, gRPC applications from their certificate providers; serve the gRPC clients in ' +
          'a node group of their own',
      );
    if (tls.caFile !== undefined || tls.caSecret === undefined)
      sink.error(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${name}": gRPC clients verify the upstream with a CA from a certificate provider: give it ` +
          'tls.caSecret (a CA Secret whose files the application reads)' +
          (tls.caFile !== undefined ? ', not caFile' : ''),
      );
    if (tls.sni !== undefined)
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${name}": gRPC clients ignore tls.sni (they name the target they dial)`,
      );
  }
}
