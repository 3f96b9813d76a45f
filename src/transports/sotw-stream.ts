/**
 * The state-of-the-world protocol state machine for one stream (ADS, or one per-type service).
 * Transport-agnostic: decoded requests in, pre-assembled response bytes out. Rules implemented
 * (docs/xds-protocol.md §4): per-type nonces, stale nonces ignored, ACK/NACK by error_detail,
 * no resend of a NACKed or ACKed version, wildcard only for LDS/CDS, full state on every new
 * stream, newly subscribed names always (re)sent, requested-but-missing names pushed once they
 * exist, CLA resent after its cluster changes, pushes ordered CDS -> EDS -> LDS -> RDS with
 * removed clusters dropped only after listeners and routes stopped using them.
 */
import { derive } from '../snapshot/derived.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import {
  diffTypes,
  makeTypeSnapshot,
  type GroupSnapshot,
  type TypeDiff,
  type TypeSnapshot,
} from '../snapshot/group-snapshot.ts';
import { shortHash } from '../shared/hash.ts';
import { kindOfTypeUrl, ResourceTypes, TypeUrls, type ResourceKind } from '../xds/resource-types.ts';
import { DR, stringField, stringFieldThen } from '../xds/wire.ts';
import { StreamBase, type NodeInput, type ContainmentHolder } from './stream-base.ts';
import { Subscription } from './subscription.ts';
import { appendAll } from '../shared/arrays.ts';
import { OVERRIDE_LAYER } from '../translate/runtime.ts';
import { servedWithTtl, sotwFramed } from './ttl.ts';

/** The fields of a DiscoveryRequest the state machine uses. */
export interface SotwRequest {
  version_info?: string;
  node?: NodeInput;
  resource_names?: readonly string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

interface TypeState extends ContainmentHolder {
  readonly kind: ResourceKind;
  readonly sub: Subscription;
  /** Nonce of the last response of this type; undefined until the first one. */
  nonce?: string;
  /**
   * What the client holds of this type, kept without a per-name copy (at ten thousand clusters a
   * copy per stream cost a megabyte and a walk of every name at every push): for every name it
   * is subscribed to that exists in `heldFrom`, the version in `heldFrom`. Undefined: it holds
   * nothing. (Two fields, not an object: a push sets them on every stream.)
   */
  heldFrom?: TypeSnapshot;
  /**
   * For LDS/CDS (full state): the version of the whole set it was last sent, so whether anything
   * changed for this client is one comparison.
   */
  heldSelection?: string;
  /** The type snapshot the last response was cut from. */
  sentSnapshot?: TypeSnapshot;
  /** The snapshot the last push decision looked at (whether or not it sent anything). */
  servedFrom?: TypeSnapshot;
  /** The client's first request said it holds the current full state (reconnect, other replica). */
  resumed?: boolean;
  /** A request that came during a warming hold, answered when the hold ends. */
  owed?: { force: boolean; names: Set<string> };
  /** The version the client's newest reply ACKed, when it answered the newest response (TTL renewals). */
  acked?: string;
}

/** Response bodies (all but the nonce) shared by every stream asking for the same selection. */
function responseBody(t: TypeSnapshot, key: string, selected: readonly EncodedResource[], ttlMs: number): Buffer {
  // Only runtime layers may have a TTL (ttl.ts): other types' bodies do not depend on it.
  if (t.kind === 'runtime') return derive(t, 'sotw-body-ttl', `${ttlMs}\u0000${key}`, makeTtlBody, { selected, ttlMs });
  return derive(t, 'sotw-body', key, makeBody, selected);
}

function makeBody(t: TypeSnapshot, selected: readonly EncodedResource[]): Buffer {
  return bodyOf(t, selected, (r) => r.framed);
}

function makeTtlBody(t: TypeSnapshot, a: { selected: readonly EncodedResource[]; ttlMs: number }): Buffer {
  return bodyOf(t, a.selected, (r) => sotwFramed(r, a.ttlMs));
}

/** version_info, each resource as `frame` makes its `resources` entry, type_url. */
function bodyOf(t: TypeSnapshot, selected: readonly EncodedResource[], frame: (r: EncodedResource) => Buffer): Buffer {
  const parts: Buffer[] = [stringField(DR.versionInfo, t.version)];
  for (const r of selected) parts.push(frame(r));
  parts.push(stringField(DR.typeUrl, TypeUrls[t.kind]));
  return Buffer.concat(parts);
}

/** The cache key of a selection of `t` (what a response body and a selection version are shared by). */
function selectionKey(sub: Subscription, t: TypeSnapshot, selected: readonly EncodedResource[]): string {
  // Every resource of the type (distinct names, in name order): one key, not thousands of names joined.
  if (selected.length === t.resources.size) return '\u0001all';
  if (selected.length === 1 && !sub.wildcard) return selected[0]!.name; // the join of one name is that name
  const names = (rs: readonly EncodedResource[]) => rs.map((r) => r.name);
  return (sub.wildcard ? ['*', ...names(selected.filter((r) => r.namedOnly))] : names(selected)).join('\u0000');
}

/** The version of a whole selection (names and versions), computed once per (snapshot, selection). */
function selectionVersion(t: TypeSnapshot, key: string, selected: readonly EncodedResource[]): string {
  return derive(t, 'selection-version', key, makeSelectionVersion, selected);
}

function makeSelectionVersion(_t: TypeSnapshot, selected: readonly EncodedResource[]): string {
  return shortHash(selected.map((r) => `${r.name}\u0000${r.version}`).join('\n'));
}

/** What a subscription selects of a type snapshot, in name order. */
function desiredOf(sub: Subscription, t: TypeSnapshot): readonly EncodedResource[] {
  const desired: EncodedResource[] = [];
  if (sub.wildcard) {
    if (sub.names.size === 0) return t.wildcard; // Envoy's LDS and CDS: the shared list itself
    appendAll(desired, t.wildcard);
    for (const name of [...sub.names].sort()) {
      const r = t.resources.get(name);
      if (r?.namedOnly) desired.push(r); // named explicitly besides the wildcard
    }
  } else if (sub.names.size * Math.log2(sub.names.size + 1) > t.resources.size) {
    // Names for most of the type (Envoy's EDS names every cluster): walk the snapshot, already in
    // name order, rather than sort thousands of names per stream and push.
    for (const r of t.resources.values()) if (sub.names.has(r.name)) desired.push(r);
  } else {
    for (const name of [...sub.names].sort()) {
      const r = t.resources.get(name);
      if (r) desired.push(r);
    }
  }
  return desired;
}

/**
 * What a client holding the older side of `d` is owed of `t` (a type sent by name, not as full
 * state): the changed and added names it subscribes to, and the forced names that exist, in name
 * order. Run once per stream per push: when one resource is owed (the common push) it allocates
 * nothing, the selection being one array per resource shared by every stream sent it alone.
 */
function owedSince(
  sub: Subscription,
  t: TypeSnapshot,
  d: TypeDiff,
  forced: ReadonlySet<string>,
): readonly EncodedResource[] {
  if (forced.size > 0) {
    const names = new Set<string>();
    for (const list of [d.changed, d.added, forced])
      for (const n of list) if (sub.covers(n) && t.resources.has(n)) names.add(n);
    return [...names].sort().map((n) => t.resources.get(n)!);
  }
  const { changed, added } = d;
  let only: EncodedResource | undefined;
  let more: EncodedResource[] | undefined;
  for (let i = 0; i < changed.length + added.length; i++) {
    const n = i < changed.length ? changed[i]! : added[i - changed.length]!;
    const r = sub.covers(n) ? t.resources.get(n) : undefined;
    if (!r) continue;
    if (!only) only = r;
    else (more ??= [only]).push(r);
  }
  if (more) return more.sort(byName);
  return only ? alone(only) : NONE;
}

/** A one-resource selection, one array per resource for every stream that is sent it alone. */
const alone = (r: EncodedResource): readonly EncodedResource[] => derive(r, 'alone', '', makeAlone, undefined);
const makeAlone = (r: EncodedResource): readonly EncodedResource[] => Object.freeze([r]);

const byName = (a: EncodedResource, b: EncodedResource) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

const NONE: readonly never[] = Object.freeze([]);
const NO_NAMES: ReadonlySet<string> = new Set();

/** Whether the stream has answered this type (or the client resumed it holding the current version). */
const answered = (ts: TypeState) => ts.nonce !== undefined || ts.resumed === true;

export class SotwStream extends StreamBase {
  private readonly types = new Map<ResourceKind, TypeState>();

  /** What the stream subscribes to of a type (by type URL; the service's own type when empty). */
  subscriptionOf(typeUrl: string): Subscription | undefined {
    const kind = typeUrl ? kindOfTypeUrl(typeUrl) : this.opts.fixedKind;
    return kind && this.types.get(kind)?.sub;
  }

  handle(req: SotwRequest): void {
    if (this.closed) return;
    this.ensureStarted(req.node);
    const kind = this.kindOf(req.type_url);
    if (!kind) return; // a type we do not serve (RTDS, ECDS, ...): the client's initial_fetch_timeout applies
    let ts = this.types.get(kind);
    if (!ts) this.types.set(kind, (ts = { kind, sub: new Subscription(ResourceTypes[kind].wildcard) }));

    const first = ts.nonce === undefined;
    if (!first) {
      // Only the newest response of a type may be answered; older nonces are stale (§4.6).
      if (req.response_nonce !== ts.nonce) return;
      const error = req.error_detail;
      ts.acked = error ? undefined : req.version_info;
      this.recordReply({
        kind,
        // A NACK is about what was sent; an ACK says which version the client now holds.
        version: error ? (ts.sentSnapshot?.version ?? '') : (req.version_info ?? ''),
        nonce: ts.nonce!,
        snapshot: ts.sentSnapshot,
        error: error ? { code: error.code ?? 0, message: error.message ?? '' } : undefined,
      });
    }
    const before = ts.sub.size;
    const added = ts.sub.setSotw(req.resource_names ?? []);
    if (first && this.resumes(ts, req.version_info)) return;
    // A plain ACK (same names, nothing new published since): nothing to decide.
    if (!first && added.length === 0 && ts.sub.size === before && ts.servedFrom === this.snapshot()?.types[kind])
      return;
    if (this.hold?.holds(kind)) {
      // Answered when the hold ends, with what this request asked for.
      const owed = (ts.owed ??= { force: false, names: new Set() });
      owed.force ||= first || added.length > 0;
      for (const n of added) owed.names.add(n);
      return;
    }
    this.push(ts, first || added.length > 0, undefined, new Set(added));
    if (kind === 'endpoint') this.hold?.progress();
  }

  /**
   * A client that reconnects (to this replica or another: versions are content hashes, the same on
   * every replica) saying it holds the current version of a full-state type already has exactly
   * what we would send: nothing is resent (docs/xds-protocol.md §4.6). Other types are answered as
   * usual, since their version does not say which names the client holds.
   */
  private resumes(ts: TypeState, version: string | undefined): boolean {
    const current = this.snapshot()?.types[ts.kind];
    if (!version || !ResourceTypes[ts.kind].wildcard || !current || current.version !== version) return false;
    if (this.snapshotToServe(ts, ts.kind, current, true) !== current) return false; // NACK containment decides
    const view = this.view(current);
    const desired = desiredOf(ts.sub, view);
    ts.heldFrom = current;
    ts.heldSelection = selectionVersion(view, selectionKey(ts.sub, view, desired), desired);
    ts.sentSnapshot = current;
    ts.servedFrom = current;
    ts.resumed = true;
    this.opts.registry.holding(this.status!, TypeUrls[ts.kind], version);
    return true;
  }

  protected onConfig(snap: GroupSnapshot): void {
    // Clusters whose content changes need their CLA again, or they stay warming (§4.7, SOTW-09).
    const cds = this.types.get('cluster');
    let changed: readonly string[] = NONE;
    let removed: readonly EncodedResource[] = NONE;
    // From what the client holds (possibly an interim snapshot of a push still held, warming-hold.ts)
    // to now: a diff shared by every stream, empty when the clusters did not change.
    const heldBefore = cds?.heldFrom;
    if (cds && heldBefore && heldBefore !== snap.types.cluster && !cds.sub.isEmpty()) {
      const d = diffTypes(heldBefore, snap.types.cluster);
      changed = d.changed.filter((name) => cds.sub.selects(snap.types.cluster.resources.get(name)!));
      removed = d.removed.filter((old) => cds.sub.selects(old));
    }
    // Make before break: a removed cluster stays in an interim CDS response until listeners and
    // routes that used it have been replaced (afterWarming drops it).
    if (cds && removed.length > 0 && answered(cds))
      this.push(cds, false, makeTypeSnapshot('cluster', [...snap.types.cluster.resources.values(), ...removed]));
    else this.refresh('cluster', snap);
    const eds = this.types.get('endpoint');
    this.refresh('endpoint', snap, eds && changed.length ? changed.filter((c) => eds.sub.covers(c)) : NONE);
    this.refresh('secret', snap);
    // The runtime layer references nothing and nothing references it: it never waits for warming.
    this.refresh('runtime', snap);
    // Clusters this push introduced: routes to them wait until their endpoints are out.
    const heldNow = cds?.heldFrom;
    const introduced =
      cds && heldBefore && heldNow && heldNow !== heldBefore
        ? diffTypes(heldBefore, heldNow).added.filter((n) => cds.sub.selects(heldNow.resources.get(n)!))
        : NONE;
    if (this.hold?.await(introduced)) return;
    this.afterWarming(snap);
  }

  protected afterWarming(snap: GroupSnapshot): void {
    this.refresh('listener', snap);
    // The filter configs listeners name: after them (a new name is subscribed once Envoy reads the
    // listener), before the routes (a route may name a token requirement a config adds).
    this.refresh('extension', snap);
    this.refresh('route', snap);
    this.refresh('cluster', snap); // drops clusters an interim response kept; nothing otherwise
  }

  /** The resource with a TTL the client holds (and subscribes to) of the runtime layers, if any. */
  private ttlHeld(ts: TypeState): EncodedResource | undefined {
    const r = ts.heldFrom?.resources.get(OVERRIDE_LAYER);
    return r && ts.sub.covers(r.name) && servedWithTtl(r) ? r : undefined;
  }

  /**
   * Renews what the client holds with a TTL (SOTW-16): the resource again, at the version the
   * client ACKed. Not a heartbeat (the name without a body): Envoy's SotW client leaves a
   * heartbeat's TTL as it was, so only a resend renews it. Only when the client is up to date: a
   * response it has not answered yet carries a TTL of its own.
   */
  protected renew(): void {
    const ts = this.types.get('runtime');
    const r = ts && this.ttlHeld(ts);
    if (!ts || !r || ts.acked === undefined || ts.acked !== ts.sentSnapshot?.version) {
      if (ts && !r) this.syncRenewal(false);
      return;
    }
    const nonce = this.nextNonce();
    ts.nonce = nonce;
    // The body every stream holding this layer at this version is renewed with: made once, shared.
    const body = responseBody(this.view(ts.sentSnapshot), r.name, alone(r), this.ttlMs);
    this.sendBytes([stringFieldThen(DR.nonce, nonce, this.controlPlaneField(DR.controlPlane)), body]);
  }

  /** Nothing to send: the client holds this version too. */
  private unchanged(kind: ResourceKind, base: TypeSnapshot): void {
    this.opts.registry.unchanged(this.status!, TypeUrls[kind], base.version);
  }

  /** Whether the stream has sent the CLA of an EDS cluster (true for clusters without one). */
  protected claDelivered(cluster: string): boolean {
    const snap = this.snapshot();
    if (!snap?.types.endpoint.resources.has(cluster)) return true;
    const eds = this.types.get('endpoint');
    return eds?.heldFrom?.resources.has(cluster) === true && eds.sub.covers(cluster);
  }

  /**
   * Brings one type up to `snap`, with what a held request is owed. Skips a type served from this
   * very snapshot already (O(1), which matters when thousands of streams see a change of another
   * type); a request still unanswered (nothing applied yet, or its names did not exist) is answered.
   */
  private refresh(kind: ResourceKind, snap: GroupSnapshot, rewarm: readonly string[] = NONE): void {
    const ts = this.types.get(kind);
    if (!ts) return;
    const owed = ts.owed;
    ts.owed = undefined;
    if (!owed && answered(ts) && !ts.heldBack && rewarm.length === 0 && ts.servedFrom === snap.types[kind]) return;
    const names = owed || rewarm.length ? new Set([...(owed?.names ?? []), ...rewarm]) : NO_NAMES;
    this.push(ts, rewarm.length > 0 || !answered(ts) || owed?.force === true, undefined, names);
  }

  /**
   * Sends what this stream should get now. LDS/CDS responses are the full state: sent whenever
   * the selection differs from the last one (an empty answer means "none exist"). Other types
   * carry only what changed or what `force` names ("delta over SotW": absence deletes nothing
   * there), and nothing when that is empty; names are remembered and sent once they exist (SOTW-08).
   */
  private push(
    ts: TypeState,
    force: boolean,
    override?: TypeSnapshot,
    forceNames: ReadonlySet<string> = NO_NAMES,
  ): void {
    const snap = this.snapshot();
    if (!snap) return; // nothing applied yet: the request is answered on the first publish
    const kind = ts.kind;
    const first = !answered(ts);
    // Decisions and ACK bookkeeping use the group's snapshot; the bytes come from this client's view of it.
    const base = override ?? this.snapshotToServe(ts, kind, snap.types[kind], first);
    const t = this.view(base);
    ts.servedFrom = override ? undefined : base;
    if (ts.sub.isEmpty()) {
      ts.heldFrom = ts.heldSelection = undefined;
      return; // unsubscribed from everything: send nothing further (SOTW-11)
    }
    const fullState = ResourceTypes[kind].wildcard;
    const heldFrom = ts.heldFrom;
    let selected: readonly EncodedResource[];
    let key: string;
    if (fullState) {
      selected = desiredOf(ts.sub, t);
      key = selectionKey(ts.sub, t, selected);
      const selection = selectionVersion(t, key, selected);
      const heldSelection = ts.heldSelection;
      ts.heldFrom = base;
      ts.heldSelection = selection;
      if (heldSelection === selection && !force) {
        if (!override) this.unchanged(kind, base); // not for the interim snapshot of a removal
        return;
      }
    } else {
      // What changed since what the client holds, among what it subscribes to, and what is forced.
      selected =
        first || forceNames.has('*') || !heldFrom
          ? desiredOf(ts.sub, t)
          : owedSince(ts.sub, t, diffTypes(heldFrom, base), forceNames);
      ts.heldFrom = base;
      if (selected.length === 0) {
        if (!override) this.unchanged(kind, base); // not for the interim snapshot of a removal
        return;
      }
      key = selectionKey(ts.sub, t, selected);
    }
    const body = responseBody(t, key, selected, this.ttlMs);
    const nonce = this.nextNonce();
    ts.nonce = nonce;
    ts.acked = undefined;
    ts.sentSnapshot = base;
    if (kind === 'runtime') this.syncRenewal(this.ttlHeld(ts) !== undefined);
    this.opts.registry.sent(this.status!, TypeUrls[kind], t.version, nonce);
    // The per-stream fields first (protobuf fields may come in any order), so that the transport can
    // write them with the message's length prefix and the shared body goes as it is.
    this.sendBytes([stringFieldThen(DR.nonce, nonce, this.controlPlaneField(DR.controlPlane)), body]);
  }
}
