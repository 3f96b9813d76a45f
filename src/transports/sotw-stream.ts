/**
 * The state-of-the-world protocol state machine for one stream (ADS, or one per-type service).
 * Transport-agnostic: it gets decoded requests and a `send` function, reads snapshots and reports
 * status. Rules implemented (envoy-xds-server-rules §4): per-type nonces, stale nonces ignored,
 * ACK/NACK by error_detail, no resend of a NACKed or ACKed version, wildcard only for LDS/CDS,
 * full state on every new stream, newly subscribed names always (re)sent, requested-but-missing
 * names pushed once they exist, CLA resent after its cluster changes, pushes ordered
 * CDS -> EDS -> LDS -> RDS -> SDS.
 */
import type { NodeIdentity } from '../model/node-groups.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import type { GroupSnapshot, TypeSnapshot } from '../snapshot/group-snapshot.ts';
import type { PublishedConfig, SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { NodeRegistry, StreamStatus } from '../status/node-registry.ts';
import { RESOURCE_KINDS, TypeUrls, kindOfTypeUrl, supportsWildcard, type ResourceKind } from '../xds/type-urls.ts';
import { DR, stringField } from '../xds/wire.ts';
import { Subscription } from './subscription.ts';

/** The fields of a DiscoveryRequest the state machine uses. */
export interface SotwRequest {
  version_info?: string;
  node?: NodeIdentity & { userAgent?: string };
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

export class ProtocolError extends Error {
  constructor(readonly grpcCode: number, message: string) {
    super(message);
  }
}

interface TypeState {
  readonly sub: Subscription;
  /** Nonce of the last response of this type; undefined until the first one. */
  nonce?: string;
  /** What the last response contained: name -> resource version. */
  sent: Map<string, string>;
  sentVersion?: string;
}

/** Response bodies (all but the nonce) shared by every stream asking for the same selection. */
const bodyCache = new WeakMap<TypeSnapshot, Map<string, Buffer>>();
const BODY_CACHE_MAX = 64;

function responseBody(t: TypeSnapshot, key: string, selected: EncodedResource[]): Buffer {
  let perType = bodyCache.get(t);
  if (!perType) bodyCache.set(t, (perType = new Map()));
  let body = perType.get(key);
  if (!body) {
    const parts: Buffer[] = [stringField(DR.versionInfo, t.version)];
    for (const r of selected) parts.push(r.framed);
    parts.push(stringField(DR.typeUrl, TypeUrls[t.kind]));
    body = Buffer.concat(parts);
    if (perType.size >= BODY_CACHE_MAX) perType.delete(perType.keys().next().value as string);
    perType.set(key, body);
  }
  return body;
}

export interface SotwStreamOptions {
  cache: SnapshotCache;
  registry: NodeRegistry;
  transport: string;
  peer: string;
  /** Per-type services fix the type; ADS takes it from each request. */
  fixedKind?: ResourceKind;
  send: (bytes: Buffer) => void;
}

export class SotwStream {
  private status?: StreamStatus;
  private node?: NodeIdentity;
  private group?: string;
  private nonceCounter = 0;
  private readonly types = new Map<ResourceKind, TypeState>();
  private unsubscribe?: () => void;
  private closed = false;

  constructor(private readonly opts: SotwStreamOptions) {}

  get streamStatus(): StreamStatus | undefined {
    return this.status;
  }

  handle(req: SotwRequest): void {
    if (this.closed) return;
    if (!this.node) this.start(req);
    const typeUrl = req.type_url || (this.opts.fixedKind ? TypeUrls[this.opts.fixedKind] : '');
    if (!typeUrl) throw new ProtocolError(3, 'type_url is required on an aggregated stream');
    const kind = kindOfTypeUrl(typeUrl);
    if (this.opts.fixedKind && kind !== this.opts.fixedKind) throw new ProtocolError(3, `this service serves ${TypeUrls[this.opts.fixedKind]}, not ${typeUrl}`);
    if (!kind) return; // a type we do not serve (RTDS, ECDS, ...): the client's initial_fetch_timeout applies
    let ts = this.types.get(kind);
    if (!ts) this.types.set(kind, (ts = { sub: new Subscription(supportsWildcard(kind)), sent: new Map() }));

    const first = ts.nonce === undefined;
    if (!first) {
      // Only the newest response of a type may be answered; older nonces are stale (§4.6).
      if (req.response_nonce !== ts.nonce) return;
      if (req.error_detail) {
        this.opts.registry.nacked(this.status!, typeUrl, ts.sentVersion ?? '', ts.nonce!, req.error_detail.code ?? 0, req.error_detail.message ?? '');
      } else {
        this.opts.registry.acked(this.status!, typeUrl, req.version_info ?? '');
      }
    }
    const added = ts.sub.setSotw(req.resource_names ?? []);
    this.push(kind, ts, first || added);
  }

  private start(req: SotwRequest): void {
    const n = req.node;
    if (!n || !n.id) throw new ProtocolError(3, 'the first request of a stream must carry node.id');
    this.node = { id: n.id, cluster: n.cluster ?? '', metadata: n.metadata ?? {} };
    const cfg = this.opts.cache.current;
    this.group = cfg ? cfg.resolver.resolve(this.node) : 'default';
    this.status = this.opts.registry.open({
      nodeId: n.id, nodeCluster: this.node.cluster, group: this.group, transport: this.opts.transport, peer: this.opts.peer, userAgent: n.userAgent ?? '',
    });
    this.unsubscribe = this.opts.cache.onPublish((next) => this.onPublish(next));
  }

  private snapshot(): GroupSnapshot | undefined {
    return this.opts.cache.current?.groups.get(this.group ?? 'default');
  }

  private onPublish(cfg: PublishedConfig): void {
    if (this.closed || !this.node) return;
    const group = cfg.resolver.resolve(this.node);
    if (group !== this.group) {
      this.group = group;
      this.status!.group = group;
    }
    const snap = cfg.groups.get(group);
    if (!snap) return;
    // Clusters whose content changes need their CLA again, or they stay warming (§4.7, SOTW-09).
    const cds = this.types.get('cluster');
    const changedClusters = new Set<string>();
    if (cds) {
      for (const [name, r] of snap.types.cluster.resources) if (cds.sent.has(name) && cds.sent.get(name) !== r.version) changedClusters.add(name);
    }
    for (const kind of RESOURCE_KINDS) {
      const ts = this.types.get(kind);
      if (!ts) continue;
      const rewarm = kind === 'endpoint' && [...changedClusters].some((c) => ts.sub.names.has(c) || ts.sub.wildcard);
      // A request still unanswered (nothing was applied yet, or its names did not exist) is answered now.
      this.push(kind, ts, rewarm || ts.nonce === undefined);
    }
  }

  /**
   * Sends the current selection for `kind` if it differs from what this stream last got, or if
   * `force`. An empty LDS/CDS answer does go out (it means "none exist"); an empty one of another
   * type does not (the names are remembered and sent once they exist, SOTW-08).
   */
  private push(kind: ResourceKind, ts: TypeState, force: boolean): void {
    const snap = this.snapshot();
    if (!snap) return; // nothing applied yet: the request is answered on the first publish
    const t = snap.types[kind];
    const selected: EncodedResource[] = [];
    if (ts.sub.wildcard) {
      for (const r of t.resources.values()) selected.push(r);
    } else {
      for (const name of [...ts.sub.names].sort()) {
        const r = t.resources.get(name);
        if (r) selected.push(r);
      }
    }
    let changed = selected.length !== ts.sent.size;
    if (!changed) for (const r of selected) if (ts.sent.get(r.name) !== r.version) { changed = true; break; }
    // LDS/CDS responses are the full state, so a removal must be sent; other types only matter
    // when they carry something (an empty EDS/RDS response is a no-op for the client).
    const fullState = supportsWildcard(kind);
    if (!changed && !force) return;
    if (ts.sub.isEmpty()) {
      ts.sent = new Map();
      return; // unsubscribed from everything: send nothing further (SOTW-11)
    }
    if (selected.length === 0 && !fullState) return;
    const key = ts.sub.wildcard ? '*' : selected.map((r) => r.name).join('\u0000');
    const body = responseBody(t, key, selected);
    const nonce = String(++this.nonceCounter);
    ts.nonce = nonce;
    ts.sent = new Map(selected.map((r) => [r.name, r.version]));
    ts.sentVersion = t.version;
    this.opts.registry.sent(this.status!, TypeUrls[kind], t.version, nonce);
    this.opts.send(Buffer.concat([body, stringField(DR.nonce, nonce)]));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    if (this.status) this.opts.registry.close(this.status);
  }
}
