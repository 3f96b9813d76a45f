/**
 * Incremental (delta) xDS for one stream, on the same subscription model and stream base as
 * SotW. Rules (docs/xds-protocol.md §5.3): a unique nonce per response; resources wrapped in
 * Resource{name, version}; subscribe/unsubscribe honoured on every request; newly subscribed names
 * always sent; names that do not exist answered in removed_resources and kept subscribed (sent
 * once they appear); deletions sent as removed_resources; on reconnect,
 * initial_resource_versions is compared with the current state (changed ones sent, vanished ones
 * removed, unchanged ones skipped); an initial wildcard request is answered even when empty.
 * A NACKed version is not pushed again. Upserts go CDS -> EDS -> LDS -> RDS, removals after.
 */
import { derive } from '../snapshot/derived.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import type { GroupSnapshot, TypeSnapshot } from '../snapshot/group-snapshot.ts';
import { RESOURCE_KINDS, ResourceTypes, TypeUrls, type ResourceKind } from '../xds/resource-types.ts';
import { DDR, encodeResourceWrapper, lenField, stringField } from '../xds/wire.ts';
import { StreamBase, type NodeInput, type PinHolder } from './stream-base.ts';
import { Subscription } from './subscription.ts';

export interface DeltaRequest {
  node?: NodeInput;
  type_url?: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

interface DeltaTypeState extends PinHolder {
  readonly kind: ResourceKind;
  readonly sub: Subscription;
  started: boolean;
  /** Versions the client holds (as far as we know): what it reported on connect plus what we sent. */
  readonly known: Map<string, string>;
  /** Responses not yet ACKed/NACKed: nonce -> the snapshot they were cut from. */
  readonly pending: Map<string, TypeSnapshot>;
  /** The snapshot the last push decision looked at: an unchanged one needs no work. */
  servedFrom?: TypeSnapshot;
  /** A request that came during a warming hold, answered when the hold ends. */
  owed?: { force: Set<string>; replyIfEmpty: boolean };
}

/** Each resource's Resource-wrapper framing, computed once per encoded resource. */
function framed(r: EncodedResource): Buffer {
  return derive(r, 'delta-framed', '', () => lenField(DDR.resources, encodeResourceWrapper(r.name, r.version, r.any)));
}

const MAX_PENDING = 32;

type Phase = 'all' | 'upserts' | 'removals';

export class DeltaStream extends StreamBase {
  private readonly types = new Map<ResourceKind, DeltaTypeState>();

  handle(req: DeltaRequest): void {
    if (this.closed) return;
    this.ensureStarted(req.node);
    const kind = this.kindOf(req.type_url);
    if (!kind) return;
    let ts = this.types.get(kind);
    if (!ts)
      this.types.set(
        kind,
        (ts = {
          kind,
          sub: new Subscription(ResourceTypes[kind].wildcard),
          started: false,
          known: new Map(),
          pending: new Map(),
        }),
      );
    const first = !ts.started;
    ts.started = true;

    if (req.response_nonce) {
      const snap = ts.pending.get(req.response_nonce);
      if (snap) {
        ts.pending.delete(req.response_nonce);
        const error = req.error_detail;
        this.recordReply({
          kind,
          version: snap.version,
          nonce: req.response_nonce,
          snapshot: snap,
          error: error ? { code: error.code ?? 0, message: error.message ?? '' } : undefined,
        });
      }
    }
    if (first) for (const [n, v] of Object.entries(req.initial_resource_versions ?? {})) ts.known.set(n, v);
    const unsubscribe = req.resource_names_unsubscribe ?? [];
    const { added, wildcardAdded } = ts.sub.applyDelta(req.resource_names_subscribe ?? [], unsubscribe, first);
    const force = new Set<string>();
    // A name (re)subscribed is sent even if we think the client has it (DELTA-04), except on a
    // new stream where initial_resource_versions says it holds exactly the current version.
    for (const n of added) if (!first || !ts.known.has(n)) force.add(n);
    for (const n of unsubscribe) {
      if (n === '*') continue;
      if (ts.sub.wildcard)
        force.add(n); // still covered by the wildcard: say so (DELTA-06)
      else ts.known.delete(n);
    }
    if (unsubscribe.includes('*')) for (const n of [...ts.known.keys()]) if (!ts.sub.covers(n)) ts.known.delete(n);
    const replyIfEmpty = first && ts.sub.wildcard;
    if (this.hold?.active) {
      // Answered when the hold ends, with what this request asked for; endpoints and secrets get
      // their upserts now (warming needs them), removals with the rest.
      const owed = (ts.owed ??= { force: new Set(), replyIfEmpty: false });
      for (const n of force) owed.force.add(n);
      owed.replyIfEmpty ||= replyIfEmpty || wildcardAdded;
      if (!this.hold.holds(kind)) this.push(ts, 'upserts', force, false);
    } else this.push(ts, 'all', force, replyIfEmpty || wildcardAdded);
    if (kind === 'endpoint') this.hold?.progress();
  }

  protected onConfig(snap: GroupSnapshot): void {
    const cds = this.types.get('cluster');
    const rewarm = new Set<string>();
    if (cds && this.stale(cds, snap)) {
      for (const [name, r] of snap.types.cluster.resources)
        if (cds.known.has(name) && cds.known.get(name) !== r.version) rewarm.add(name);
    }
    // Upserts of clusters, their endpoints and secrets first; removals only after routes moved.
    let introduced: string[] = [];
    for (const kind of ['cluster', 'endpoint', 'secret'] as const) {
      const ts = this.types.get(kind);
      const force = kind === 'endpoint' ? rewarm : new Set<string>();
      if (!ts?.started || (!ts.owed && !force.size && !this.stale(ts, snap))) continue;
      const fresh = this.push(ts, 'upserts', new Set([...force, ...(ts.owed?.force ?? [])]), false);
      if (kind === 'cluster') introduced = fresh;
    }
    if (this.hold?.await(introduced)) return;
    this.afterWarming(snap);
  }

  protected afterWarming(snap: GroupSnapshot): void {
    const todo = RESOURCE_KINDS.filter((kind) => {
      const ts = this.types.get(kind);
      return ts?.started && (ts.owed || this.stale(ts, snap));
    });
    for (const kind of todo)
      if (kind === 'listener' || kind === 'route') {
        const ts = this.types.get(kind)!;
        this.push(ts, 'upserts', ts.owed?.force ?? new Set(), false);
      }
    for (const kind of todo) {
      const ts = this.types.get(kind)!;
      const owed = ts.owed;
      ts.owed = undefined;
      this.push(ts, 'removals', owed?.force ?? new Set(), owed?.replyIfEmpty ?? false);
    }
  }

  /** Whether a type has not been brought up to `snap` yet (removals are the last step of a push). */
  private stale(ts: DeltaTypeState, snap: GroupSnapshot): boolean {
    return ts.pinned !== undefined || ts.servedFrom !== snap.types[ts.kind];
  }

  /** Whether the stream has sent the CLA of an EDS cluster (true for clusters without one). */
  protected claDelivered(cluster: string): boolean {
    const snap = this.snapshot();
    return !snap?.types.endpoint.resources.has(cluster) || this.types.get('endpoint')?.known.has(cluster) === true;
  }

  /** Sends what `phase` calls for; returns the names the client did not hold before (upserts only). */
  private push(ts: DeltaTypeState, phase: Phase, force: Set<string>, replyIfEmpty: boolean): string[] {
    const snap = this.snapshot();
    if (!snap) return [];
    // Decisions and ACK bookkeeping use the group's snapshot; the bytes come from this client's view of it.
    const base = this.snapshotToServe(ts, ts.kind, snap.types[ts.kind], ts.pending.size === 0 && ts.known.size === 0);
    const t = this.view(base);
    if (phase !== 'upserts') ts.servedFrom = base; // both phases have looked at it
    const upserts: EncodedResource[] = [];
    const removed = new Set<string>();
    const consider = (name: string) => {
      const r = t.resources.get(name);
      if (r) {
        if (ts.known.get(name) !== r.version || force.has(name)) upserts.push(r);
      } else if (ts.known.has(name) || force.has(name)) {
        removed.add(name);
      }
    };
    const candidates = new Set<string>(ts.sub.wildcard ? t.wildcard.map((r) => r.name) : []);
    for (const name of ts.sub.names) candidates.add(name);
    for (const name of candidates) consider(name);
    // Newly subscribed or unsubscribed-under-wildcard names that do not exist: say so (DELTA-05/06).
    for (const name of force) if (!t.resources.has(name)) removed.add(name);
    // Names the client holds that no longer exist (deleted while it was connected, or while it was away).
    for (const name of ts.known.keys()) if (!t.resources.has(name)) removed.add(name);
    const sendUpserts = phase !== 'removals' ? upserts : [];
    const sendRemoved = phase !== 'upserts' ? [...removed] : [];
    if (!sendUpserts.length && !sendRemoved.length && !replyIfEmpty) {
      if (phase !== 'upserts' && ts.pending.size === 0)
        this.opts.registry.unchanged(this.status!, TypeUrls[ts.kind], base.version);
      return [];
    }

    const nonce = this.nextNonce();
    const parts: Buffer[] = [stringField(DDR.systemVersionInfo, t.version)];
    for (const r of sendUpserts.sort((a, b) => (a.name < b.name ? -1 : 1))) parts.push(framed(r));
    parts.push(stringField(DDR.typeUrl, TypeUrls[ts.kind]), stringField(DDR.nonce, nonce));
    for (const n of sendRemoved.sort()) parts.push(stringField(DDR.removedResources, n));
    parts.push(this.controlPlaneField(DDR.controlPlane));
    const fresh = sendUpserts.filter((r) => !ts.known.has(r.name)).map((r) => r.name);
    for (const r of sendUpserts) ts.known.set(r.name, r.version);
    for (const n of sendRemoved) ts.known.delete(n);
    ts.pending.set(nonce, base);
    if (ts.pending.size > MAX_PENDING) ts.pending.delete(ts.pending.keys().next().value as string);
    this.opts.registry.sent(this.status!, TypeUrls[ts.kind], t.version, nonce);
    // Many small framed resources: one buffer writes faster than a writev of hundreds.
    this.sendBytes([Buffer.concat(parts)]);
    return fresh;
  }
}
