/**
 * Checks of listeners and what node groups carry together: TCP listeners, access logs, domains,
 * per-group conflicts, the shape of Envoy patches.
 */
import { Codes } from '../shared/diagnostics.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import type { GrpcServiceDoc, ListenerDoc, VirtualHostDoc } from './schema.ts';
import type { EnvoyPatchDoc } from './patch-schema.ts';
import { listenerGroups, type Model } from './types.ts';

import { checkTargets } from './route-checks.ts';

/** One form per patch; filters go to listeners, at one anchor each, with a typed config naming its type. */
export function checkPatchShape(p: EnvoyPatchDoc, r: DocRef, sink: DiagnosticSink): void {
  const forms = (['merge', 'jsonPatch', 'filters'] as const).filter((k) => p[k] !== undefined);
  if (forms.length !== 1)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      [],
      forms.length
        ? `use one of merge, jsonPatch, filters per patch (got ${forms.join(', ')})`
        : 'a patch needs one of merge, jsonPatch, filters',
    );
  if (p.filters && p.target.kind !== 'listener')
    sink.error(Codes.INVALID_VALUE, r, ['filters'], 'filters are added to listeners (target kind listener)');
  for (const at of ['http', 'network'] as const)
    p.filters?.[at]?.forEach((f, i) => {
      if (f.before !== undefined && f.after !== undefined)
        sink.error(Codes.INVALID_VALUE, r, ['filters', at, i], 'use one of before and after');
      if (typeof f.typedConfig['@type'] !== 'string')
        sink.error(
          Codes.INVALID_VALUE,
          r,
          ['filters', at, i, 'typedConfig'],
          "typedConfig needs '@type': the type URL of the filter's config message",
        );
    });
  p.jsonPatch?.forEach((op, i) => {
    if ((op.op === 'move' || op.op === 'copy') && op.from === undefined)
      sink.error(Codes.INVALID_VALUE, r, ['jsonPatch', i], `${op.op} needs from`);
    if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && !('value' in op))
      sink.error(Codes.INVALID_VALUE, r, ['jsonPatch', i], `${op.op} needs value`);
  });
}

/**
 * What a port carries: HTTP (virtualHosts) or TCP (tcp: one service or a split), and the server
 * names passed through untouched to services; a listener of passthrough names alone closes
 * connections for any other name. A passthrough name cannot also be terminated here.
 */
export function checkTcpListener(l: ListenerDoc, r: DocRef, sink: DiagnosticSink, needService: NeedService): void {
  if (l.virtualHosts && l.tcp)
    sink.error(Codes.INVALID_VALUE, r, [], 'a listener carries HTTP (virtualHosts) or TCP (tcp), not both');
  else if (!l.virtualHosts && !l.tcp && !l.passthrough)
    sink.error(Codes.INVALID_VALUE, r, [], 'a listener needs virtualHosts (HTTP), tcp (TCP proxying) or passthrough');
  else if (!l.virtualHosts && !l.tcp && l.tls)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['tls'],
      'a listener of passthrough names alone terminates nothing; connections for other names are closed',
    );
  if (l.tcp) {
    if ((l.tcp.to === undefined) === (l.tcp.split === undefined))
      sink.error(Codes.INVALID_VALUE, r, ['tcp'], 'tcp needs one of to and split');
    for (const s of checkTargets(l.tcp, ['tcp'], r, sink, needService))
      if (s.dns?.mode === 'logical' && l.tcp.split)
        sink.warn(
          Codes.INVALID_VALUE,
          r,
          ['tcp'],
          `service "${s.name}" resolves one address at a time (dns.mode logical)`,
        );
    if (l.tls?.sni)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['tls', 'sni'],
        'a TCP listener terminates TLS with one certificate (tls.secret)',
      );
  }
  const terminated = new Set((l.tls?.sni ?? []).flatMap((e) => e.serverNames.map((n) => n.toLowerCase())));
  const passed = new Map<string, number>();
  l.passthrough?.forEach((p, i) => {
    needService(r, ['passthrough', i, 'to'], p.to);
    p.serverNames.forEach((n, j) => {
      const key = n.toLowerCase();
      const at: PathSegment[] = ['passthrough', i, 'serverNames', j];
      if (passed.has(key))
        sink.error(Codes.CONFLICT, r, at, `server name "${n}" is also in passthrough[${passed.get(key)}]`);
      else if (terminated.has(key))
        sink.error(Codes.CONFLICT, r, at, `server name "${n}" is terminated here (tls.sni) and passed through`);
      passed.set(key, i);
    });
  });
}

export function checkDomainClashes(
  l: ListenerDoc,
  vhosts: { get(name: string): VirtualHostDoc | undefined },
  r: DocRef,
  sink: DiagnosticSink,
): void {
  const owner = new Map<string, string>();
  (l.virtualHosts ?? []).forEach((name, i) => {
    const v = vhosts.get(name);
    if (!v) return;
    for (const d of v.domains) {
      const key = d.toLowerCase();
      const prev = owner.get(key);
      if (prev !== undefined && prev !== name) {
        sink.error(
          Codes.CONFLICT,
          r,
          ['virtualHosts', i],
          `domain "${d}" is served by both virtual hosts "${prev}" and "${name}" on this listener`,
        );
      }
      owner.set(key, name);
    }
  });
}

const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '::']);

export function checkGroupConflicts(
  model: Model,
  groups: string[],
  ref: (kind: string, name: string) => DocRef,
  sink: DiagnosticSink,
): void {
  const reported = new Set<string>();
  for (const g of groups) {
    const listeners = model.listeners.filter((l) => listenerGroups(l).includes(g));
    for (let i = 0; i < listeners.length; i++) {
      for (let j = 0; j < i; j++) {
        const a = listeners[j]!;
        const b = listeners[i]!;
        if (a.port !== b.port) continue;
        const aa = a.address ?? '0.0.0.0',
          ba = b.address ?? '0.0.0.0';
        if (aa !== ba && !WILDCARD_ADDRESSES.has(aa) && !WILDCARD_ADDRESSES.has(ba)) continue;
        const key = `${a.name}|${b.name}`;
        if (reported.has(key)) continue;
        reported.add(key);
        sink.error(
          Codes.CONFLICT,
          ref('Listener', b.name),
          ['port'],
          `port ${b.port} is also bound by listener "${a.name}" (${aa}:${a.port}) in node group "${g}"`,
        );
      }
    }
    const targets = new Map<string, string>();
    const listenerNames = new Set(listeners.map((l) => l.name));
    for (const s of model.grpcServices.filter((x: GrpcServiceDoc) => listenerGroups(x).includes(g))) {
      const prev = targets.get(s.target);
      const key = `${g}|${s.target}`;
      if (prev !== undefined && !reported.has(key)) {
        reported.add(key);
        sink.error(
          Codes.CONFLICT,
          ref('GrpcService', s.name),
          ['target'],
          `target "${s.target}" is also served by GrpcService "${prev}" in node group "${g}"`,
        );
      }
      if (listenerNames.has(s.target) && !reported.has(`${key}|l`)) {
        reported.add(`${key}|l`);
        sink.error(
          Codes.CONFLICT,
          ref('GrpcService', s.name),
          ['target'],
          `target "${s.target}" has the same name as a Listener in node group "${g}"`,
        );
      }
      targets.set(s.target, s.name);
    }
  }
}
