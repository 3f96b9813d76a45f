/**
 * Rules that a schema cannot express: one-of choices, references between documents (with
 * "did you mean"), per-group conflicts, and what proxyless gRPC clients can consume.
 */
import { runtimeFlagWarnings } from './runtime-flags.ts';
import { isIP } from 'node:net';
import { checkGrpcServers, checkGrpcTargets, type GrpcCheckContext } from './grpc-checks.ts';
import {
  checkCarriedFeatures,
  checkListenerFeatures,
  checkServiceFeatures,
  checkVirtualHostFeatures,
  featureCheck,
} from './feature-checks.ts';
import { Codes } from '../shared/diagnostics.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import type { ListenerDoc, SecretDoc, ServiceDoc, VirtualHostDoc } from './schema.ts';
import { DEFAULT_GROUP, groupNames, LIST_OF, listenerGroups, type DocKind, type Model } from './types.ts';
import { editDistance } from '../shared/edit-distance.ts';
import { checkService, checkUpstreamNames } from './service-checks.ts';
import { checkGrpcRoute, checkHeaders, checkHttpRoute, checkShadowedRoutes, checkStringMatch } from './route-checks.ts';
import { checkLocalityAcrossDocuments } from './locality-checks.ts';
import { checkDeadline, hasDeadline, RESERVED_RUNTIME_PREFIX } from '../features/kit/deadline.ts';
import { checkTcpListener, checkDomainClashes, checkGroupConflicts, checkPatchShape } from './listener-checks.ts';

/** The model's definition of a document (src/model/assemble.ts). */
type Lookup = (kind: string, name: string) => { doc: object; ref: DocRef } | undefined;

import { once, onceCiting, perDocument, type CheckMemo } from './check-memo.ts';

export { newCheckMemo, type CheckMemo } from './check-memo.ts';

/**
 * `lookup` finds the model's documents by kind and name (the assembler's index: nothing is
 * indexed again here per tree).
 */
export function checkModel(model: Model, sink: DiagnosticSink, lookup: Lookup, memo?: CheckMemo): void {
  const c = modelRefs(model, sink, lookup, memo);
  checkServices(c);
  checkNodeGroups(c);
  checkSecrets(c);
  const carried = checkListeners(c);
  checkVirtualHosts(c, carried);
  checkGrpcDocuments(c);
  checkPolicies(c);
  checkPatches(c);
  checkRuntimes(c);
  checkGroupConflicts(model, groupNames(model), c.ref, sink);
  checkLocalityAcrossDocuments(c);
}

/** The documents a check refers to by name, and how a reference to a missing one is reported. */
interface ModelRefs {
  model: Model;
  sink: DiagnosticSink;
  memo: CheckMemo | undefined;
  services: Named<ServiceDoc>;
  vhosts: Named<VirtualHostDoc>;
  secrets: Named<SecretDoc>;
  groups: ReadonlySet<string>;
  ref: (kind: string, name: string) => DocRef;
  /** " (did you mean ...?)" for the nearest of `candidates`, or nothing. */
  suggest: (name: string, candidates: Iterable<string>) => string;
  needService: NeedService;
  needGroups: (r: DocRef, gs: string[] | undefined) => void;
  needSecret: (r: DocRef, path: PathSegment[], name: string, want: 'ca' | 'certificate') => void;
}

interface Named<T> {
  list: readonly T[];
  get: (name: string) => T | undefined;
  keys: () => string[];
}

function modelRefs(model: Model, sink: DiagnosticSink, lookup: Lookup, memo: CheckMemo | undefined): ModelRefs {
  const find = <T extends { name: string }>(kind: DocKind) => {
    const list = (model[LIST_OF[kind]] ?? []) as unknown as readonly T[];
    return {
      list,
      get: (name: string) => lookup(kind, name)?.doc as T | undefined,
      keys: () => list.map((d) => d.name),
    };
  };
  const services = find<ServiceDoc>('Service');
  const vhosts = find<VirtualHostDoc>('VirtualHost');
  const secrets = find<SecretDoc>('Secret');
  const groups = new Set(groupNames(model));
  const ref = (kind: string, name: string) => lookup(kind, name)!.ref;

  const suggest = (name: string, candidates: Iterable<string>): string => {
    let best: string | undefined;
    let bestD = Infinity;
    for (const c of candidates) {
      const d = editDistance(name, c);
      if (d < bestD) [best, bestD] = [c, d];
    }
    return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? ` (did you mean "${best}"?)` : '';
  };
  const needService = (r: DocRef, path: PathSegment[], name: string): ServiceDoc | undefined => {
    const s = services.get(name);
    if (!s)
      sink.error(Codes.UNKNOWN_REFERENCE, r, path, `service "${name}" does not exist${suggest(name, services.keys())}`);
    return s;
  };
  const needGroups = (r: DocRef, gs: string[] | undefined): void => {
    (gs ?? []).forEach((g, i) => {
      if (!groups.has(g))
        sink.error(
          Codes.UNKNOWN_REFERENCE,
          r,
          ['groups', i],
          `node group "${g}" does not exist${suggest(g, groups)}; define it with kind: NodeGroup`,
        );
    });
  };

  const needSecret = (r: DocRef, path: PathSegment[], name: string, want: 'ca' | 'certificate'): void => {
    const sec = secrets.get(name);
    if (!sec)
      sink.error(Codes.UNKNOWN_REFERENCE, r, path, `secret "${name}" does not exist${suggest(name, secrets.keys())}`);
    else if (want === 'ca' && !sec.caFile)
      sink.error(Codes.INVALID_VALUE, r, path, `secret "${name}" is not a CA bundle (it needs caFile)`);
    else if (want === 'certificate' && !sec.certificateFile)
      sink.error(Codes.INVALID_VALUE, r, path, `secret "${name}" holds no certificate`);
  };
  return { model, sink, memo, services, vhosts, secrets, groups, ref, suggest, needService, needGroups, needSecret };
}

/** Services: each alone (memoized), the secrets their TLS names, the members of aggregates. */
function checkServices(c: ModelRefs): void {
  const { model, sink, memo, ref, needService, needSecret } = c;
  perDocument(memo, 'services', sink, model.services, undefined, [model.secrets], (s) => {
    once(memo?.service, s, sink, () => {
      checkService(s, ref('Service', s.name), sink);
      checkUpstreamNames(s, ref('Service', s.name), sink);
      checkServiceFeatures(s, featureCheck(ref('Service', s.name), sink));
    });
    if (s.tls?.caSecret !== undefined) needSecret(ref('Service', s.name), ['tls', 'caSecret'], s.tls.caSecret, 'ca');
    if (s.tls?.clientSecret !== undefined)
      needSecret(ref('Service', s.name), ['tls', 'clientSecret'], s.tls.clientSecret, 'certificate');
    if (s.tls?.caSecret && s.tls.caFile)
      sink.error(Codes.INVALID_VALUE, ref('Service', s.name), ['tls'], 'use caFile or caSecret, not both');
  });

  for (const s of model.services) {
    if (!s.aggregate) continue;
    const r = ref('Service', s.name);
    s.aggregate.forEach((name, i) => {
      const path = ['aggregate', i];
      if (name === s.name) sink.error(Codes.INVALID_VALUE, r, path, 'an aggregate service cannot list itself');
      else if (needService(r, path, name)?.aggregate)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          path,
          `service "${name}" is an aggregate too: list its members here instead`,
        );
    });
  }
}

/** Node groups: the default group matches no criteria, every other group some. */
function checkNodeGroups(c: ModelRefs): void {
  const { model, sink, ref } = c;
  for (const g of model.nodeGroups) {
    const r = ref('NodeGroup', g.name);
    const criteria = g.match ? Object.keys(g.match).length : 0;
    if (g.name === DEFAULT_GROUP && criteria)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['match'],
        'the default group catches every node no other group matches; it takes no `match`',
      );
    if (g.name !== DEFAULT_GROUP && !criteria)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['match'],
        'a node group needs `match` with at least one of cluster, idPattern, metadata, locality',
      );
  }
}

/** Secrets: a certificate with its key, or a CA bundle; onHost paths only for files it has. */
function checkSecrets(c: ModelRefs): void {
  const { model, sink, ref } = c;
  for (const s of model.secrets) {
    const r = ref('Secret', s.name);
    if (!s.caFile && !(s.certificateFile && s.privateKeyFile))
      sink.error(Codes.INVALID_VALUE, r, [], 'a secret needs certificateFile and privateKeyFile, or caFile');
    if (s.caFile && (s.certificateFile || s.privateKeyFile))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['caFile'],
        'an Envoy secret is either a certificate or a CA bundle: put caFile in a Secret of its own',
      );
    if (Boolean(s.certificateFile) !== Boolean(s.privateKeyFile))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [s.certificateFile ? 'privateKeyFile' : 'certificateFile'],
        'certificateFile and privateKeyFile go together',
      );
    for (const k of ['certificateFile', 'privateKeyFile', 'caFile'] as const)
      if (s.onHost?.[k] !== undefined && s[k] === undefined)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          ['onHost', k],
          `onHost.${k} is where applications read this secret's ${k}; the secret has no ${k}`,
        );
  }
}

/** Listeners, and the virtual hosts they carry (returned: those carried by some listener). */
function checkListeners(c: ModelRefs): Set<string> {
  const { model, sink, vhosts, ref, suggest, needService, needGroups } = c;
  const usedVhosts = new Set<string>();
  for (const l of model.listeners) {
    const r = ref('Listener', l.name);
    needGroups(r, l.groups);
    if (l.address !== undefined && !isIP(l.address))
      sink.error(Codes.INVALID_VALUE, r, ['address'], `"${l.address}" is not an IP address`);
    checkTcpListener(l, r, sink, needService);
    checkHeaders(l.headers, ['headers'], r, sink);
    if (l.headers && !l.virtualHosts)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['headers'],
        'headers apply to HTTP requests: this listener has no virtualHosts',
      );
    checkListenerFeatures(l, featureCheck(r, sink, needService));
    (l.virtualHosts ?? []).forEach((v, i) => {
      usedVhosts.add(v);
      const vdoc = vhosts.get(v);
      if (vdoc) checkCarriedFeatures(l, vdoc, featureCheck(ref('VirtualHost', v), sink));
      else
        sink.error(
          Codes.UNKNOWN_REFERENCE,
          r,
          ['virtualHosts', i],
          `virtual host "${v}" does not exist${suggest(v, vhosts.keys())}`,
        );
    });
    if (l.tls) checkListenerTls(l.tls, r, c);
    checkDomainClashes(l, vhosts, r, sink);
  }

  return usedVhosts;
}

/** A TLS listener's certificate, client CA and SNI entries (each server name once). */
function checkListenerTls(tls: NonNullable<ListenerDoc['tls']>, r: DocRef, c: ModelRefs): void {
  const { sink, secrets, suggest, needSecret } = c;
  const sec = secrets.get(tls.secret);
  if (!sec)
    sink.error(
      Codes.UNKNOWN_REFERENCE,
      r,
      ['tls', 'secret'],
      `secret "${tls.secret}" does not exist${suggest(tls.secret, secrets.keys())}`,
    );
  else if (!sec.certificateFile)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['tls', 'secret'],
      `secret "${sec.name}" has no certificate; a TLS listener needs certificateFile and privateKeyFile`,
    );
  if (tls.clientCa !== undefined) needSecret(r, ['tls', 'clientCa'], tls.clientCa, 'ca');
  const seenNames = new Map<string, number>();
  tls.sni?.forEach((e, i) => {
    needSecret(r, ['tls', 'sni', i, 'secret'], e.secret, 'certificate');
    e.serverNames.forEach((n, j) => {
      const prev = seenNames.get(n.toLowerCase());
      if (prev !== undefined)
        sink.error(
          Codes.CONFLICT,
          r,
          ['tls', 'sni', i, 'serverNames', j],
          `server name "${n}" is also in tls.sni[${prev}]`,
        );
      seenNames.set(n.toLowerCase(), i);
    });
  });
}

/** Virtual hosts and their routes (memoized by the services they cite); one no listener carries is warned of. */
function checkVirtualHosts(c: ModelRefs, carried: ReadonlySet<string>): void {
  const { model, sink, memo, services, ref, needService } = c;
  perDocument(memo, 'virtualHosts', sink, model.virtualHosts, model.services, [model.listeners], (v) => {
    if (!carried.has(v.name))
      sink.warn(
        Codes.UNKNOWN_REFERENCE,
        ref('VirtualHost', v.name),
        [],
        'no Listener carries this virtual host; it is not served',
      );
    return onceCiting(memo?.citing, v, sink, services, needService, (need) => {
      const r = ref('VirtualHost', v.name);
      v.routes.forEach((route, i) => checkHttpRoute(route, ['routes', i], r, sink, need));
      checkHeaders(v.headers, ['headers'], r, sink);
      checkVirtualHostFeatures(v, featureCheck(r, sink, need));
      checkShadowedRoutes(v.routes, r, sink);
    });
  });
}

/** gRPC services and servers, for proxyless clients. */
function checkGrpcDocuments(c: ModelRefs): void {
  const { model, sink, memo, services, ref, needService, needGroups, needSecret } = c;
  const grpc: GrpcCheckContext = {
    ref,
    needGroups,
    needSecret,
    checkHeader: (h, path, r) => checkStringMatch(h, path, r, sink),
    service: (name) => services.get(name),
  };
  for (const g of model.grpcServices) {
    const r = ref('GrpcService', g.name);
    needGroups(r, g.groups);
    const cited = onceCiting(memo?.citing, g, sink, services, needService, (need) =>
      g.routes.forEach((route, i) => checkGrpcRoute(route, ['routes', i], r, sink, need)),
    );
    // Outside the memo: it depends on what else the node groups carry.
    checkGrpcTargets(g, cited, model, sink, grpc);
  }
  checkGrpcServers(model, sink, grpc);
}

/** Guard and Rollout: at most one of each; rollout stages named once, naming node groups that exist. */
function checkPolicies(c: ModelRefs): void {
  const { model, sink, groups, ref, suggest } = c;
  // At most one policy of each kind: two would leave which one applies to chance.
  for (const [kind, docs] of [
    ['Guard', model.guards ?? []],
    ['Rollout', model.rollouts ?? []],
  ] as const) {
    for (const d of docs.slice(1))
      sink.error(Codes.CONFLICT, ref(kind, d.name), [], `only one ${kind} per tree; "${docs[0]!.name}" is one already`);
  }
  for (const ro of model.rollouts ?? []) {
    const r = ref('Rollout', ro.name);
    if (ro.acceptUnauthenticatedNodes)
      sink.warn(
        Codes.INVALID_VALUE,
        r,
        ['acceptUnauthenticatedNodes'],
        'proxies the transport does not authenticate count in gates and halt on NACK: any client that can ' +
          'reach fleetxds can claim a node id and promote or halt this rollout',
      );
    const seen = new Set<string>();
    ro.stages.forEach((st, i) => {
      if (seen.has(st.name) || st.name === 'rest')
        sink.error(
          Codes.CONFLICT,
          r,
          ['stages', i, 'name'],
          st.name === 'rest' ? '"rest" is the implicit last stage' : `stage "${st.name}" is defined twice`,
        );
      seen.add(st.name);
      (st.select?.groups ?? []).forEach((g, j) => {
        if (!groups.has(g))
          sink.error(
            Codes.UNKNOWN_REFERENCE,
            r,
            ['stages', i, 'select', 'groups', j],
            `node group "${g}" does not exist${suggest(g, groups)}`,
          );
      });
    });
  }
}

/** Envoy patches: the groups they name and the shape of each. */
function checkPatches(c: ModelRefs): void {
  const { model, sink, ref, needGroups } = c;
  for (const p of model.envoyPatches ?? []) {
    const r = ref('EnvoyPatch', p.name);
    needGroups(r, p.groups);
    checkPatchShape(p, r, sink);
  }
}

/**
 * Runtime documents: the groups they name, their deadline, and each key set by one document per
 * group, and by one override (a document with a deadline, in the layer above) besides.
 */
function checkRuntimes(c: ModelRefs): void {
  const { model, sink, ref, needGroups } = c;
  const setBy = new Map<string, string>();
  for (const rt of model.runtimes ?? []) {
    const r = ref('Runtime', rt.name);
    needGroups(r, rt.groups);
    checkDeadline(rt, [], { error: (code, path, message) => sink.error(code, r, path, message) });
    const layer = hasDeadline(rt) ? 'override' : 'base';
    runtimeFlagWarnings(rt, (key, message) => sink.warn(Codes.INVALID_VALUE, r, ['values', key], message));
    for (const key of Object.keys(rt.values)) {
      if (key.startsWith(RESERVED_RUNTIME_PREFIX)) {
        sink.error(
          Codes.INVALID_VALUE,
          r,
          ['values', key],
          `keys under "${RESERVED_RUNTIME_PREFIX}" are fleetxds's own (fault windows): choose another name`,
          'key',
        );
        continue;
      }
      for (const group of listenerGroups(rt)) {
        const at = `${layer}\u0000${group}\u0000${key}`;
        const other = setBy.get(at);
        if (other === undefined) setBy.set(at, rt.name);
        else
          sink.error(
            Codes.CONFLICT,
            r,
            ['values', key],
            layer === 'base'
              ? `runtime key "${key}" is set for node group "${group}" by Runtime "${other}" too: set it in one ` +
                  '(an override, with until or for, may set it again)'
              : `runtime key "${key}" is set for node group "${group}" by the override "${other}" too: set it in one`,
            'key',
          );
      }
    }
  }
}
