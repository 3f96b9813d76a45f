/**
 * Rules that a schema cannot express: one-of choices, references between documents (with
 * "did you mean"), per-group conflicts, and what proxyless gRPC clients can consume.
 */
import { isIP } from 'node:net';
import { parseDurationMs } from '../shared/duration.ts';
import { checkRegex } from './regex-check.ts';
import {
  checkCarriedProtection,
  checkListenerProtection,
  checkUpstreamNames,
  checkVirtualHostProtection,
} from './protection-checks.ts';
import { checkGrpcServers, checkGrpcTargets, type GrpcCheckContext } from './grpc-checks.ts';
import { GRPC_FEATURES, supportedFrom } from './grpc-compat.ts';
import {
  checkGrpcHashPolicy,
  checkRetryBudget,
  checkTrafficListener,
  checkTrafficRoute,
  checkTrafficVirtualHost,
} from './traffic-checks.ts';
import { Codes } from '../shared/diagnostics.ts';
import type { Diagnostic, PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import type {
  AccessLogDoc,
  HeadersDoc,
  SecretDoc,
  GrpcRouteDoc,
  GrpcServiceDoc,
  HeaderMatchDoc,
  ListenerDoc,
  QueryMatchDoc,
  RetriesDoc,
  RouteDoc,
  ServiceDoc,
  VirtualHostDoc,
} from './schema.ts';
import type { EnvoyPatchDoc } from './patch-schema.ts';
import { DEFAULT_GROUP, groupNames, LIST_OF, listenerGroups, type DocKind, type Model } from './types.ts';
import { editDistance } from '../shared/edit-distance.ts';
import { sameItems } from '../shared/same-items.ts';
import { changedNames, findByName } from '../shared/sorted-lists.ts';
import { cidrRange, parseHostPort } from './addresses.ts';
import { appendAll } from '../shared/arrays.ts';

/** The model's definition of a document (src/model/assemble.ts). */
type Lookup = (kind: string, name: string) => { doc: object; ref: DocRef } | undefined;

/** Envoy's router retry conditions (x-envoy-retry-on and x-envoy-retry-grpc-on). */
export const ENVOY_RETRY_ON = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);
/** The gRPC status conditions proxyless clients implement (gRFC A44). */
export const GRPC_RETRY_ON = new Set([
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

/**
 * Results of checks by document identity: parsed documents of unchanged files are the same
 * objects as last time, so a one-file change checks that file's documents again and replays the
 * others' diagnostics. A check that reads other documents (a virtual host's routes name services)
 * is replayed only while each document it read is still the same object, or still missing.
 */
export interface CheckMemo {
  readonly service: WeakMap<object, Diagnostic[]>;
  readonly citing: WeakMap<object, CitingResult>;
  /** Checks run per document of a model list, patched like the list (perDocument()). */
  readonly lists: Map<string, PerDocumentState>;
}

interface CitingResult {
  diagnostics: Diagnostic[];
  /** The model's services when it ran: while they are the same array, nothing it looked up changed. */
  services: readonly ServiceDoc[];
  /** The services the check looked up, and what it found. */
  cited: [string, ServiceDoc | undefined][];
}

export function newCheckMemo(): CheckMemo {
  return { service: new WeakMap(), citing: new WeakMap(), lists: new Map() };
}

const NOTHING_READ: ReadonlySet<string> = new Set();

/** What a per-document check of one model list reported, and what it read, as of its last run. */
interface PerDocumentState {
  inputs: readonly unknown[];
  list: readonly { name: string }[];
  reads?: readonly { name: string }[];
  /** By document name, only documents that reported something. */
  reported: Map<string, Diagnostic[]>;
  /** By name in `reads`: the documents whose check read it. */
  readers: Map<string, Set<string>>;
  /** By document name: the names its check read. */
  readBy: Map<string, readonly string[]>;
}

/**
 * A check run for each document of `list`, patched like the list: while `inputs` are the same
 * objects, a list patched from the last one (src/shared/sorted-lists.ts) has only its changed
 * documents checked again, and those whose check read a changed name of `reads` (a virtual host
 * whose routes name a changed service); the others' diagnostics are replayed. The state is
 * updated in place and dropped when the result has errors (their "did you mean" hints depend on
 * every name; a tree with errors is not applied anyway).
 */
function perDocument<T extends { name: string }>(
  memo: CheckMemo | undefined,
  key: string,
  sink: DiagnosticSink,
  list: readonly T[],
  reads: readonly { name: string }[] | undefined,
  inputs: readonly unknown[],
  check: (doc: T) => Iterable<string> | void,
): void {
  const hit = memo?.lists.get(key);
  const same = hit && sameItems(hit.inputs, inputs);
  const docs = same ? changedNames(hit.list, list) : undefined;
  const read = reads ? (same ? changedNames(hit.reads, reads) : undefined) : NOTHING_READ;
  const state: PerDocumentState =
    hit && docs && read ? hit : { inputs, list, reads, reported: new Map(), readers: new Map(), readBy: new Map() };
  const run = (name: string, doc: T | undefined) => {
    state.reported.delete(name);
    for (const r of state.readBy.get(name) ?? []) state.readers.get(r)?.delete(name);
    state.readBy.delete(name);
    if (!doc) return;
    const before = sink.diagnostics.length;
    const names = check(doc);
    const reported = sink.diagnostics.splice(before);
    if (reported.length) state.reported.set(name, reported);
    if (!names) return;
    const readNames = [...names];
    state.readBy.set(name, readNames);
    for (const r of readNames) {
      let set = state.readers.get(r);
      if (!set) state.readers.set(r, (set = new Set()));
      set.add(name);
    }
  };
  if (state === hit) {
    const again = new Set(docs);
    for (const r of read!) for (const name of state.readers.get(r) ?? []) again.add(name);
    for (const name of again) run(name, findByName(list, name));
    Object.assign(state, { inputs, list, reads });
  } else for (const doc of list) run(doc.name, doc);
  let errors = false;
  for (const ds of state.reported.values()) {
    appendAll(sink.diagnostics, ds);
    errors ||= ds.some((d) => d.severity === 'error');
  }
  if (!memo) return;
  if (errors) memo.lists.delete(key);
  else memo.lists.set(key, state);
}

/** Runs a one-document check, or replays what it reported for this very object before. */
function once(memo: WeakMap<object, Diagnostic[]> | undefined, doc: object, sink: DiagnosticSink, run: () => void) {
  const hit = memo?.get(doc);
  if (hit) {
    appendAll(sink.diagnostics, hit);
    return;
  }
  const before = sink.diagnostics.length;
  run();
  memo?.set(doc, sink.diagnostics.slice(before));
}

/**
 * A check of `doc` that looks services up: replayed while every service it looked up is the same
 * object (or still missing). Results with errors are not kept: their "did you mean" hints depend
 * on every name, and a tree with errors is not applied anyway.
 */
function onceCiting(
  memo: WeakMap<object, CitingResult> | undefined,
  doc: object,
  sink: DiagnosticSink,
  services: { list: readonly ServiceDoc[]; get(name: string): ServiceDoc | undefined },
  needService: NeedService,
  run: (need: NeedService) => void,
): string[] {
  const hit = memo?.get(doc);
  if (hit && (hit.services === services.list || hit.cited.every(([name, s]) => services.get(name) === s))) {
    appendAll(sink.diagnostics, hit.diagnostics);
    return hit.cited.map(([name]) => name);
  }
  const before = sink.diagnostics.length;
  const cited: CitingResult['cited'] = [];
  run((r, path, name) => {
    const s = needService(r, path, name);
    cited.push([name, s]);
    return s;
  });
  const diagnostics = sink.diagnostics.slice(before);
  if (memo && !diagnostics.some((d) => d.severity === 'error'))
    memo.set(doc, { diagnostics, services: services.list, cited });
  return cited.map(([name]) => name);
}

/**
 * `lookup` finds the model's documents by kind and name (the assembler's index: nothing is
 * indexed again here per tree).
 */
export function checkModel(model: Model, sink: DiagnosticSink, lookup: Lookup, memo?: CheckMemo): void {
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
  perDocument(memo, 'services', sink, model.services, undefined, [model.secrets], (s) => {
    once(memo?.service, s, sink, () => {
      checkService(s, ref('Service', s.name), sink);
      checkUpstreamNames(s, ref('Service', s.name), sink);
      checkRetryBudget(s, ref('Service', s.name), sink);
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
        'a node group needs `match` with at least one of cluster, idPattern, metadata',
      );
  }

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

  const usedVhosts = new Set<string>();
  for (const l of model.listeners) {
    const r = ref('Listener', l.name);
    needGroups(r, l.groups);
    if (l.address !== undefined && !isIP(l.address))
      sink.error(Codes.INVALID_VALUE, r, ['address'], `"${l.address}" is not an IP address`);
    checkTcpListener(l, r, sink, needService);
    checkHeaders(l.headers, ['headers'], r, sink);
    if (l.http && !l.virtualHosts)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['http'],
        'http settings are for HTTP listeners: this one has no virtualHosts',
      );
    const h2 = l.http?.http2;
    if (
      h2?.initialStreamWindowSize !== undefined &&
      h2.initialConnectionWindowSize !== undefined &&
      h2.initialConnectionWindowSize < h2.initialStreamWindowSize
    )
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['http', 'http2', 'initialConnectionWindowSize'],
        'the connection window must be at least the stream window',
      );
    if (l.headers && !l.virtualHosts)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        ['headers'],
        'headers apply to HTTP requests: this listener has no virtualHosts',
      );
    l.accessLog?.forEach((a, i) => checkAccessLog(a, ['accessLog', i], !!l.tcp, r, sink, needService));
    checkListenerProtection(l, r, sink, needService);
    checkTrafficListener(l, r, sink, needService);
    (l.virtualHosts ?? []).forEach((v, i) => {
      usedVhosts.add(v);
      const vdoc = vhosts.get(v);
      if (vdoc) checkCarriedProtection(l, vdoc, ref('VirtualHost', v), sink);
      else
        sink.error(
          Codes.UNKNOWN_REFERENCE,
          r,
          ['virtualHosts', i],
          `virtual host "${v}" does not exist${suggest(v, vhosts.keys())}`,
        );
    });
    if (l.tls) {
      const sec = secrets.get(l.tls.secret);
      if (!sec)
        sink.error(
          Codes.UNKNOWN_REFERENCE,
          r,
          ['tls', 'secret'],
          `secret "${l.tls.secret}" does not exist${suggest(l.tls.secret, secrets.keys())}`,
        );
      else if (!sec.certificateFile)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          ['tls', 'secret'],
          `secret "${sec.name}" has no certificate; a TLS listener needs certificateFile and privateKeyFile`,
        );
      if (l.tls.clientCa !== undefined) needSecret(r, ['tls', 'clientCa'], l.tls.clientCa, 'ca');
      const seenNames = new Map<string, number>();
      l.tls.sni?.forEach((e, i) => {
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
    checkDomainClashes(l, vhosts, r, sink);
  }

  perDocument(memo, 'virtualHosts', sink, model.virtualHosts, model.services, [model.listeners], (v) => {
    if (!usedVhosts.has(v.name))
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
      checkVirtualHostProtection(v, r, sink);
      checkTrafficVirtualHost(v, r, sink);
      checkShadowedRoutes(v.routes, r, sink);
    });
  });

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

  for (const p of model.envoyPatches ?? []) {
    const r = ref('EnvoyPatch', p.name);
    needGroups(r, p.groups);
    checkPatchShape(p, r, sink);
  }

  checkGroupConflicts(model, groupNames(model), ref, sink);
}

/** One form per patch; filters go to listeners, at one anchor each, with a typed config naming its type. */
function checkPatchShape(p: EnvoyPatchDoc, r: DocRef, sink: DiagnosticSink): void {
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

/** What an aggregate service cannot have: it only orders other services, which have these. */
const NOT_ON_AGGREGATES = [
  'endpoints',
  'dns',
  'registration',
  'lb',
  'ringHash',
  'weightedByLoad',
  'healthCheck',
  'circuitBreaker',
  'outlierDetection',
  'tls',
  'protocol',
  'connectTimeout',
  'panicThreshold',
] as const;

function checkService(s: ServiceDoc, r: DocRef, sink: DiagnosticSink): void {
  if (s.aggregate)
    for (const k of NOT_ON_AGGREGATES)
      if (s[k] !== undefined)
        sink.error(
          Codes.INVALID_VALUE,
          r,
          [k],
          `an aggregate service only orders other services: \`${k}\` belongs on its members`,
        );
  if (s.ringHash && s.lb !== 'ring_hash')
    sink.error(Codes.INVALID_VALUE, r, ['ringHash'], 'ringHash goes with lb: ring_hash');
  if (s.panicThreshold !== undefined && s.lb === 'weighted_by_load')
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['panicThreshold'],
      "lb: weighted_by_load is Envoy's load-balancing policy extension, which keeps no panic threshold",
    );
  if (s.weightedByLoad && s.lb !== 'weighted_by_load')
    sink.error(Codes.INVALID_VALUE, r, ['weightedByLoad'], 'weightedByLoad goes with lb: weighted_by_load');
  const update = s.weightedByLoad?.weightUpdatePeriod;
  if (update !== undefined && (parseDurationMs(update) ?? 0) < 100)
    sink.error(
      Codes.INVALID_VALUE,
      r,
      ['weightedByLoad', 'weightUpdatePeriod'],
      'weights are computed at most every 100ms',
    );
  if (s.ringHash?.minSize !== undefined && s.ringHash.maxSize !== undefined && s.ringHash.minSize > s.ringHash.maxSize)
    sink.error(Codes.INVALID_VALUE, r, ['ringHash'], 'minSize is above maxSize');
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
  const hc = s.healthCheck;
  if (hc) {
    if (hc.type === 'http' && !hc.path)
      sink.error(Codes.INVALID_VALUE, r, ['healthCheck'], 'an http health check needs `path`');
    if (hc.type !== 'http' && hc.path)
      sink.error(Codes.INVALID_VALUE, r, ['healthCheck', 'path'], `\`path\` applies to http checks, not ${hc.type}`);
    if (hc.type !== 'grpc' && hc.serviceName !== undefined)
      sink.error(Codes.INVALID_VALUE, r, ['healthCheck', 'serviceName'], '`serviceName` applies to grpc checks only');
  }
  if (s.tls?.caFile && !s.tls.caFile.startsWith('/'))
    sink.error(Codes.INVALID_VALUE, r, ['tls', 'caFile'], 'caFile is a path on the proxy host and must be absolute');
}

function checkStringMatch(
  m: HeaderMatchDoc | QueryMatchDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
): void {
  const set = (['exact', 'prefix', 'regex', 'present'] as const).filter(
    (k) => (m as Record<string, unknown>)[k] !== undefined,
  );
  if (set.length > 1)
    sink.error(Codes.INVALID_VALUE, r, path, `use only one of exact, prefix, regex, present (got ${set.join(', ')})`);
  if (m.regex !== undefined) checkRegex(m.regex, [...path, 'regex'], r, sink);
}

/**
 * What a port carries: HTTP (virtualHosts) or TCP (tcp: one service or a split), and the server
 * names passed through untouched to services; a listener of passthrough names alone closes
 * connections for any other name. A passthrough name cannot also be terminated here.
 */
function checkTcpListener(l: ListenerDoc, r: DocRef, sink: DiagnosticSink, needService: NeedService): void {
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
    if (l.websocket !== undefined)
      sink.error(Codes.INVALID_VALUE, r, ['websocket'], 'WebSocket upgrades are HTTP: a TCP listener passes any bytes');
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

/** An Envoy format operator: %NAME%, %NAME(arguments)%, optionally :length. */
const FORMAT_OPERATOR = /^%[A-Z][A-Z0-9_]*(\([^()%]*\))?(:[0-9]+)?%$/;

/** The `%...%` pieces of an access log format that are not operators Envoy could parse. */
function badOperators(format: string): string[] {
  const bad: string[] = [];
  for (let at = format.indexOf('%'); at >= 0;) {
    const end = format.indexOf('%', at + 1);
    if (end < 0) {
      bad.push(format.slice(at));
      break;
    }
    const piece = format.slice(at, end + 1);
    if (piece !== '%%' && !FORMAT_OPERATOR.test(piece)) bad.push(piece);
    at = format.indexOf('%', end + 1);
  }
  return bad;
}

function checkAccessLog(
  a: AccessLogDoc,
  path: PathSegment[],
  tcp: boolean,
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): void {
  if (typeof a.to === 'object') {
    const s = needService(r, [...path, 'to', 'service'], a.to.service);
    if (s && s.protocol !== 'grpc' && s.protocol !== 'http2')
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'to', 'service'],
        `the access log service protocol is gRPC: service "${s.name}" needs protocol: grpc`,
      );
    for (const k of ['format', 'fields', 'text'] as const)
      if (a[k] !== undefined)
        sink.error(Codes.INVALID_VALUE, r, [...path, k], 'a gRPC access log service gets every field, structured');
  } else if (a.to !== 'stdout' && a.to !== 'stderr' && !a.to.startsWith('/'))
    sink.error(Codes.INVALID_VALUE, r, [...path, 'to'], `"${a.to}" is not stdout, stderr or an absolute file path`);
  const format = a.format ?? 'json';
  if (format === 'text' && a.text === undefined)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'text'], 'format text needs the line to write (text)');
  if (format === 'json' && a.text !== undefined)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'text'], 'text goes with format: text (json takes fields)');
  if (format === 'text' && a.fields !== undefined)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'fields'], 'fields go with format: json (text takes text)');
  const formats: [PathSegment[], string][] = [
    ...(a.text !== undefined ? [[[...path, 'text'], a.text] as [PathSegment[], string]] : []),
    ...Object.entries(a.fields ?? {}).map(([k, v]) => [[...path, 'fields', k], v] as [PathSegment[], string]),
  ];
  for (const [at, f] of formats)
    for (const bad of badOperators(f))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        at,
        `"${bad}" is not an Envoy format operator (%NAME%, %NAME(arg)%, %NAME:len%)`,
      );
  const status = a.filter?.status;
  if (status?.min !== undefined && status.max !== undefined && status.min > status.max)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'filter', 'status'], `min ${status.min} is above max ${status.max}`);
  if (tcp && (status || a.filter?.notHealthCheck))
    sink.error(
      Codes.INVALID_VALUE,
      r,
      [...path, 'filter'],
      'a TCP listener logs connections: they have no status and are no health checks',
    );
}

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Header edits Envoy would refuse: names that are no header name, pseudo-headers, and (on requests)
 * `host`, which Envoy does not let a route change; values with line breaks or broken operators.
 */
function checkHeaders(h: HeadersDoc | undefined, path: PathSegment[], r: DocRef, sink: DiagnosticSink): void {
  for (const side of ['request', 'response'] as const) {
    const e = h?.[side];
    if (!e) continue;
    const name = (n: string, at: PathSegment[]) => {
      if (n.startsWith(':') || (side === 'request' && n.toLowerCase() === 'host'))
        sink.error(
          Codes.INVALID_VALUE,
          r,
          at,
          `"${n}" cannot be changed by a route (Envoy refuses pseudo-headers and host)`,
        );
      else if (!HEADER_NAME.test(n)) sink.error(Codes.INVALID_VALUE, r, at, `"${n}" is not a header name`);
    };
    for (const op of ['set', 'add'] as const)
      for (const [n, v] of Object.entries(e[op] ?? {})) {
        const at: PathSegment[] = [...path, side, op, n];
        name(n, at);
        if (/[\r\n\0]/.test(v))
          sink.error(Codes.INVALID_VALUE, r, at, 'a header value cannot hold a line break or NUL');
        for (const bad of badOperators(v))
          sink.error(Codes.INVALID_VALUE, r, at, `"${bad}" is not an Envoy format operator (write %% for a literal %)`);
      }
    e.remove?.forEach((n, i) => name(n, [...path, side, 'remove', i]));
  }
}

function checkTargets(
  route: { to?: string; split?: { service: string; weight: number }[] },
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): ServiceDoc[] {
  const out: ServiceDoc[] = [];
  if (route.to !== undefined) {
    const s = needService(r, [...path, 'to'], route.to);
    if (s) out.push(s);
  }
  if (route.split) {
    const seen = new Set<string>();
    route.split.forEach((t, j) => {
      if (seen.has(t.service))
        sink.error(
          Codes.CONFLICT,
          r,
          [...path, 'split', j, 'service'],
          `service "${t.service}" appears twice in this split`,
        );
      seen.add(t.service);
      const s = needService(r, [...path, 'split', j, 'service'], t.service);
      if (s) out.push(s);
    });
    if (route.split.reduce((a, t) => a + t.weight, 0) === 0)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'split'], 'the weights of a split must not all be 0');
  }
  return out;
}

function checkRetries(
  retries: RetriesDoc | undefined,
  allowed: Set<string>,
  what: string,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
): void {
  retries?.on.forEach((c, i) => {
    if (!allowed.has(c))
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'retries', 'on', i],
        `"${c}" is not a ${what} retry condition (one of ${[...allowed].join(', ')})`,
      );
  });
  const b = retries?.backoff;
  if (b?.max !== undefined && (parseDurationMs(b.max) ?? 0) < (parseDurationMs(b.base) ?? 0))
    sink.error(Codes.INVALID_VALUE, r, [...path, 'retries', 'backoff', 'max'], 'max is below base');
  if (b && (parseDurationMs(b.base) ?? 0) <= 0)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'retries', 'backoff', 'base'], 'base must be above 0');
  retries?.retriableHeaders?.forEach((h, i) =>
    checkStringMatch(h, [...path, 'retries', 'retriableHeaders', i], r, sink),
  );
  if (what === 'gRPC')
    for (const k of ['statusCodes', 'retryOtherHosts', 'hostSelectionAttempts', 'retriableHeaders'] as const)
      if (retries?.[k] !== undefined)
        sink.error(
          Codes.CLIENT_COMPAT,
          r,
          [...path, 'retries', k],
          `\`${k}\` is HTTP's: gRPC clients retry on status names (on) with backoff only`,
        );
}

function checkHttpRoute(
  route: RouteDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): void {
  const actions = (['to', 'split', 'redirect', 'directResponse'] as const).filter((k) => route[k] !== undefined);
  if (actions.length !== 1) {
    sink.error(
      Codes.INVALID_VALUE,
      r,
      path,
      actions.length
        ? `use only one of to, split, redirect, directResponse (got ${actions.join(', ')})`
        : 'a route needs one of to, split, redirect, directResponse',
    );
  }
  const forwards = route.to !== undefined || route.split !== undefined;
  checkHeaders(route.headers, [...path, 'headers'], r, sink);
  for (const k of ['timeout', 'retries', 'rewrite', 'websocket'] as const) {
    if (route[k] !== undefined && !forwards)
      sink.error(Codes.INVALID_VALUE, r, [...path, k], `\`${k}\` applies only to routes that forward (to or split)`);
  }
  const m = route.match;
  if (m) {
    const specs = (['prefix', 'path', 'regex'] as const).filter((k) => m[k] !== undefined);
    if (specs.length > 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'match'],
        `use only one of prefix, path, regex (got ${specs.join(', ')})`,
      );
    if (m.regex !== undefined) checkRegex(m.regex, [...path, 'match', 'regex'], r, sink);
    m.headers?.forEach((h, j) => {
      checkStringMatch(h, [...path, 'match', 'headers', j], r, sink);
    });
    m.query?.forEach((q, j) => {
      checkStringMatch(q, [...path, 'match', 'query', j], r, sink);
    });
    if (route.rewrite?.prefix !== undefined && m.regex !== undefined)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'rewrite', 'prefix'],
        'a prefix rewrite needs a prefix or path match',
      );
  }
  checkRetries(route.retries, ENVOY_RETRY_ON, 'Envoy', path, r, sink);
  const targets = checkTargets(route, path, r, sink, needService);
  checkTrafficRoute(route, path, r, sink, needService, targets);
  route.hashPolicy?.forEach((h, i) => {
    const set = (['header', 'cookie', 'sourceIp', 'query'] as const).filter((k) => h[k] !== undefined);
    if (set.length !== 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'hashPolicy', i],
        `a hash policy takes one of header, cookie, sourceIp, query${set.length ? ` (got ${set.join(', ')})` : ''}`,
      );
  });
  if (route.hashPolicy)
    for (const s of targets)
      if (s.lb !== 'ring_hash' && s.lb !== 'maglev')
        sink.warn(
          Codes.INVALID_VALUE,
          r,
          [...path, 'hashPolicy'],
          `service "${s.name}" balances ${s.lb ?? 'round_robin'}: the hash policy has no effect ` +
            '(use lb ring_hash or maglev)',
        );
}

type RouteMatchDoc = NonNullable<RouteDoc['match']>;

/** What matters of a route's match for shadowing, computed once per route. */
interface MatchShape {
  conditions: Set<string>;
  sensitive: boolean;
  prefix?: string;
  path?: string;
  regex: boolean;
}

function matchShape(m: RouteMatchDoc): MatchShape {
  const conditions = new Set([
    ...(m.headers ?? []).map((h) => `h${JSON.stringify(h)}`),
    ...(m.query ?? []).map((q) => `q${JSON.stringify(q)}`),
  ]);
  const regex = m.regex !== undefined;
  return {
    conditions,
    sensitive: m.caseSensitive ?? true,
    regex,
    path: m.path,
    prefix: m.path === undefined && !regex ? (m.prefix ?? '/') : undefined,
  };
}

/**
 * A route is never used when an earlier route of its virtual host matches every request it matches.
 * An earlier route can only do that if its prefix is a prefix of this route's path or prefix (or
 * "/"), so earlier routes are indexed by prefix and path: each route probes its own prefixes,
 * O(path length), instead of comparing with every earlier route (quadratic in a large virtual host).
 */
function checkShadowedRoutes(routes: RouteDoc[], r: DocRef, sink: DiagnosticSink): void {
  const shapes = routes.map((route) => matchShape(route.match ?? {}));
  const index = { prefix: new Map<string, number[]>(), path: new Map<string, number[]>() };
  const add = (map: Map<string, number[]>, key: string, i: number) =>
    (map.get(key) ?? map.set(key, []).get(key)!).push(i);
  const keyOf = (x: string, sensitive: boolean) => (sensitive ? `s${x}` : `i${x.toLowerCase()}`);
  shapes.forEach((b, i) => {
    const candidates: number[] = [
      ...(index.prefix.get('s/') ?? []),
      ...(index.prefix.get('i/') ?? []),
      ...(index.prefix.get('s') ?? []),
    ];
    const value = b.path ?? b.prefix;
    if (value !== undefined) {
      for (let len = 1; len <= value.length; len++) {
        const p = value.slice(0, len);
        // A case-sensitive earlier route covers only case-sensitive later ones (see matchCovers).
        if (b.sensitive) appendAll(candidates, index.prefix.get(keyOf(p, true)) ?? []);
        appendAll(candidates, index.prefix.get(keyOf(p, false)) ?? []);
      }
      if (b.path !== undefined) {
        if (b.sensitive) appendAll(candidates, index.path.get(keyOf(b.path, true)) ?? []);
        appendAll(candidates, index.path.get(keyOf(b.path, false)) ?? []);
      }
    }
    const j = candidates.filter((k) => matchCovers(shapes[k]!, b)).sort((x, y) => x - y)[0];
    if (j !== undefined) {
      const name = (k: number) => (routes[k]!.name ? ` ("${routes[k]!.name}")` : '');
      sink.warn(
        Codes.SHADOWED_ROUTE,
        r,
        ['routes', i, 'match'],
        `this route${name(i)} is never used: routes[${j}]${name(j)} comes first and matches every request it ` +
          `matches; put the more specific route first`,
      );
    }
    if (b.prefix !== undefined) add(index.prefix, b.prefix === '' ? 's' : keyOf(b.prefix, b.sensitive), i);
    if (b.path !== undefined) add(index.path, keyOf(b.path, b.sensitive), i);
  });
}

/** Whether every request matching `b` also matches `a` (conservative: false when unsure, e.g. regexes). */
function matchCovers(a: MatchShape, b: MatchShape): boolean {
  if (a.regex || a.conditions.size > b.conditions.size) return false;
  for (const c of a.conditions) if (!b.conditions.has(c)) return false;
  if (a.prefix === '/' || a.prefix === '') return true; // every path starts with "/"
  // A case-sensitive `a` does not cover a case-insensitive `b` (b matches other spellings).
  if (a.sensitive && !b.sensitive) return false;
  const fold = (x: string) => (a.sensitive ? x : x.toLowerCase());
  const bValue = b.path ?? b.prefix;
  if (bValue === undefined) return false;
  if (a.prefix !== undefined) return fold(bValue).startsWith(fold(a.prefix));
  return b.path !== undefined && fold(b.path) === fold(a.path!);
}

function checkGrpcRoute(
  route: GrpcRouteDoc,
  path: PathSegment[],
  r: DocRef,
  sink: DiagnosticSink,
  needService: NeedService,
): void {
  if ((route.to === undefined) === (route.split === undefined))
    sink.error(Codes.INVALID_VALUE, r, path, 'a gRPC route needs exactly one of to, split');
  checkGrpcHashPolicy(route, path, r, sink);
  const m = route.match;
  if (m) {
    if (m.method !== undefined && m.service === undefined)
      sink.error(Codes.INVALID_VALUE, r, [...path, 'match', 'method'], '`method` needs `service`');
    const specs = [
      m.service !== undefined ? 'service' : undefined,
      m.prefix !== undefined ? 'prefix' : undefined,
      m.path !== undefined ? 'path' : undefined,
    ].filter(Boolean);
    if (specs.length > 1)
      sink.error(
        Codes.INVALID_VALUE,
        r,
        [...path, 'match'],
        `use only one of service/method, prefix, path (got ${specs.join(', ')})`,
      );
    m.headers?.forEach((h, j) => {
      checkStringMatch(h, [...path, 'match', 'headers', j], r, sink);
    });
  }
  checkRetries(route.retries, GRPC_RETRY_ON, 'gRPC', path, r, sink);
  if (route.fault && !route.fault.delay && !route.fault.abort)
    sink.error(Codes.INVALID_VALUE, r, [...path, 'fault'], 'a fault injects a delay, an abort or both: give one');
  const targets = checkTargets(route, path, r, sink, needService);
  for (const s of targets) {
    // gRFC A37: gRPC resolves a LOGICAL_DNS cluster's one host name itself; STRICT_DNS is not supported.
    if (s.dns && s.dns.mode !== 'logical')
      sink.error(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" uses strict DNS, which proxyless gRPC clients do not resolve: give it ` +
          '`dns.mode: logical` (gRFC A37: the client resolves the name itself) or static endpoints',
      );
    if (s.lb === 'random' || s.lb === 'maglev')
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" uses lb ${s.lb}, which no gRPC client implements: they refuse (NACK) the cluster`,
      );
    else if (s.lb === 'least_request')
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" uses lb least_request, which gRPC clients implement only from ` +
          `${supportedFrom(GRPC_FEATURES.leastRequest).join(', ')}: others refuse (NACK) the cluster`,
      );
    const o = s.outlierDetection;
    const ignored = (['consecutive5xx', 'consecutiveGatewayFailure'] as const).filter((k) => o?.[k] !== undefined);
    if (ignored.length)
      sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `service "${s.name}" ejects on ${ignored.join(' and ')}, which gRPC clients ignore (gRFC A50): use ` +
          'outlierDetection.successRate or failurePercentage for them',
      );
  }
}

function checkDomainClashes(
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

function checkGroupConflicts(
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
