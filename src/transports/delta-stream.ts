/**
 * Incremental (delta) xDS for one stream, on the same subscription model and stream base as
 * SotW. Rules (docs/xds-protocol.md §5.3): a unique nonce per response; resources wrapped in
 * Resource{name, version}; subscribe/unsubscribe honoured on every request; newly subscribed names
 * always sent; names that do not exist answered in removed_resources and kept subscribed (sent
 * once they appear); deletions sent as removed_resources; on reconnect,
 * initial_resource_versions is compared with the current state (changed ones sent, vanished ones
 * removed, unchanged ones skipped); an initial wildcard request is answered even when empty.
 * A NACKed version is not pushed again. Upserts go CDS -> EDS -> LDS -> RDS, removals after.
 *
 * What a client holds is kept as the snapshot its last complete push was cut from plus the names
 * where it differs (see DeltaTypeState), so a push or an ACK costs what changed since, through the
 * diff every stream of the group shares, not a walk of every name the stream subscribes to.
 */
import { derive } from '../snapshot/derived.ts';
import type { EncodedResource } from '../snapshot/encoder.ts';
import { diffTypes, type GroupSnapshot, type TypeSnapshot } from '../snapshot/group-snapshot.ts';
import { RESOURCE_KINDS, ResourceTypes, TypeUrls, type ResourceKind } from '../xds/resource-types.ts';
import { DDR, encodeResourceWrapper, lenField, stringField } from '../xds/wire.ts';
import { OVERRIDE_LAYER } from '../translate/runtime.ts';
import { deltaHeartbeat, deltaTtlFramed, servedWithTtl } from './ttl.ts';
import { StreamBase, type NodeInput, type ContainmentHolder } from './stream-base.ts';
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

interface DeltaTypeState extends ContainmentHolder {
  readonly kind: ResourceKind;
  readonly sub: Subscription;
  started: boolean;
  /**
   * What the client holds (as far as we know: what it reported on connect plus what we sent),
   * without a copy per name: for a name the subscription selects, its version in `from` (the
   * snapshot the last complete push brought the client to; none if it is not there), unless
   * `except` says otherwise (the version held, or null for none). `except` holds only the names
   * where the rule is wrong: those sent by a push not complete yet (upserts ahead of removals), the
   * versions reported on connect, names whose subscription changed since. Undefined `from`: the
   * rule gives nothing, `except` says everything.
   */
  from?: TypeSnapshot;
  readonly except: Map<string, string | null>;
  /** Responses not yet ACKed/NACKed: nonce -> the snapshot they were cut from. */
  readonly pending: Map<string, TypeSnapshot>;
  /** A request that came during a warming hold, answered when the hold ends. */
  owed?: { force: Set<string>; replyIfEmpty: boolean };
}

/** Each resource's Resource-wrapper framing, computed once per encoded resource. */
function framed(r: EncodedResource): Buffer {
  return derive(r, 'delta-framed', '', makeFramed, undefined);
}

function makeFramed(r: EncodedResource): Buffer {
  return lenField(DDR.resources, encodeResourceWrapper(r.name, r.version, r.any));
}

function holdsAny(except: ReadonlyMap<string, string | null>): boolean {
  for (const v of except.values()) if (v !== null) return true;
  return false;
}

/** system_version_info of a response cut from `t`, encoded once per type snapshot. */
const versionField = (t: TypeSnapshot) => derive(t, 'delta-version', '', makeVersionField, undefined);
const makeVersionField = (t: TypeSnapshot) => stringField(DDR.systemVersionInfo, t.version);
const TYPE_URL_FIELDS = Object.fromEntries(
  RESOURCE_KINDS.map((k) => [k, stringField(DDR.typeUrl, TypeUrls[k])]),
) as Record<ResourceKind, Buffer>;

/** Up to this many resources go as parts of their own (not copied); more are copied into one buffer. */
const SEPARATE_RESOURCES = 8;
const MAX_PENDING = 32;
const NO_NAMES: ReadonlySet<string> = new Set();

/**
 * The order of a push's last step: a listener before the filter configs and routes it names (a
 * route may name a token requirement a filter config adds), removals of what they used after them.
 */
const AFTER_WARMING: readonly ResourceKind[] = [
  'listener',
  'extension',
  'route',
  'cluster',
  'endpoint',
  'secret',
  'runtime',
];

/** Upserts alone (ahead of listeners and routes), or everything due (which completes a push). */
type Phase = 'upserts' | 'all';

/** What a push sent of resources the client held before (`updated`) or did not (`introduced`). */
interface Pushed {
  readonly introduced: readonly string[];
  readonly updated: readonly string[];
}
const NOTHING_PUSHED: Pushed = { introduced: [], updated: [] };

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
          except: new Map(),
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
    if (first) for (const [n, v] of Object.entries(req.initial_resource_versions ?? {})) ts.except.set(n, v);
    const subscribe = req.resource_names_subscribe ?? [];
    const unsubscribe = req.resource_names_unsubscribe ?? [];
    const { added, wildcardAdded } = this.resubscribe(ts, subscribe, unsubscribe, first);
    const force = new Set<string>();
    // A name (re)subscribed is sent even if we think the client has it (DELTA-04), except on a
    // new stream where initial_resource_versions says it holds exactly the current version.
    for (const n of added) if (!first || this.held(ts, n) === undefined) force.add(n);
    // Unsubscribed but still covered by the wildcard: say so (DELTA-06).
    if (ts.sub.wildcard) for (const n of unsubscribe) if (n !== '*') force.add(n);
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

  /**
   * Applies a request's subscribe and unsubscribe lists, keeping what the client holds as it was:
   * subscribing to a name does not give it to the client, unsubscribing drops it (DELTA-03, -06).
   */
  private resubscribe(
    ts: DeltaTypeState,
    subscribe: readonly string[],
    unsubscribe: readonly string[],
    first: boolean,
  ): { added: string[]; wildcardAdded: boolean } {
    // The wildcard switched on selects names the client does not hold: spell out what it does hold.
    if (subscribe.includes('*') && !ts.sub.wildcard) this.spellOut(ts);
    const before = subscribe.map((n) => this.held(ts, n));
    const result = ts.sub.applyDelta(subscribe, unsubscribe, first);
    subscribe.forEach((n, i) => this.setHeld(ts, n, before[i]));
    for (const n of unsubscribe) if (n !== '*') this.setHeld(ts, n, undefined);
    if (unsubscribe.includes('*')) for (const n of [...ts.except.keys()]) if (!ts.sub.covers(n)) ts.except.delete(n);
    return result;
  }

  /** What the client holds of `name`: its version, or undefined for nothing. */
  private held(ts: DeltaTypeState, name: string): string | undefined {
    const e = ts.except.get(name);
    if (e !== undefined) return e ?? undefined;
    return this.implied(ts, name);
  }

  /** What the rule (without `except`) says the client holds of `name`. */
  private implied(ts: DeltaTypeState, name: string): string | undefined {
    const r = ts.from && this.view(ts.from).resources.get(name);
    return r && ts.sub.selects(r) ? r.version : undefined;
  }

  private setHeld(ts: DeltaTypeState, name: string, version: string | undefined): void {
    if (this.implied(ts, name) === version) ts.except.delete(name);
    else ts.except.set(name, version ?? null);
  }

  /** Turns the rule into `except` entries, so that what the client holds no longer depends on its subscription. */
  private spellOut(ts: DeltaTypeState): void {
    if (!ts.from) return;
    for (const r of this.view(ts.from).resources.values())
      if (!ts.except.has(r.name) && ts.sub.selects(r)) ts.except.set(r.name, r.version);
    ts.from = undefined;
  }

  protected onConfig(snap: GroupSnapshot): void {
    // Upserts of clusters, their endpoints, secrets and the runtime layer first; removals only after
    // routes moved. Clusters whose content changed need their CLA again, or they stay warming (§4.7).
    let pushed = NOTHING_PUSHED;
    for (const kind of ['cluster', 'endpoint', 'secret', 'runtime'] as const) {
      const ts = this.types.get(kind);
      const rewarm =
        kind === 'endpoint' && ts
          ? pushed.updated.filter((c) => ts.sub.covers(c) && snap.types.endpoint.resources.has(c))
          : [];
      if (!ts?.started || (!ts.owed && !rewarm.length && !this.stale(ts, snap))) continue;
      const force = ts.owed || rewarm.length ? new Set([...rewarm, ...(ts.owed?.force ?? [])]) : NO_NAMES;
      const sent = this.push(ts, 'upserts', force, false);
      if (kind === 'cluster') pushed = sent;
    }
    if (this.hold?.await(pushed.introduced)) return;
    this.afterWarming(snap);
  }

  protected afterWarming(snap: GroupSnapshot): void {
    // Listeners and routes, then what clusters, endpoints and secrets lost (their upserts went
    // first, in onConfig; any not sent yet, because the stream fell behind meanwhile, go now).
    for (const kind of AFTER_WARMING) {
      const ts = this.types.get(kind);
      if (!ts?.started || (!ts.owed && !this.stale(ts, snap))) continue;
      const owed = ts.owed;
      ts.owed = undefined;
      this.push(ts, 'all', owed?.force ?? NO_NAMES, owed?.replyIfEmpty ?? false);
    }
  }

  /** Whether a type has not been brought up to `snap` yet (a complete push sets `from`). */
  private stale(ts: DeltaTypeState, snap: GroupSnapshot): boolean {
    return ts.heldBack !== undefined || ts.from !== snap.types[ts.kind];
  }

  /** Whether the stream has sent the CLA of an EDS cluster (true for clusters without one). */
  protected claDelivered(cluster: string): boolean {
    const snap = this.snapshot();
    const eds = this.types.get('endpoint');
    return !snap?.types.endpoint.resources.has(cluster) || (eds !== undefined && this.held(eds, cluster) !== undefined);
  }

  /** The names whose state may differ from what the client holds: from the shared diff, never the whole type. */
  private namesToCheck(
    ts: DeltaTypeState,
    base: TypeSnapshot,
    t: TypeSnapshot,
    force: ReadonlySet<string>,
  ): Set<string> {
    const names = new Set<string>(ts.except.keys());
    for (const n of force) names.add(n);
    if (!ts.from) {
      if (ts.sub.wildcard) for (const r of t.wildcard) names.add(r.name);
      for (const n of ts.sub.names) names.add(n);
    } else if (ts.from !== base) {
      const d = diffTypes(ts.from, base);
      for (const n of d.changed) names.add(n);
      for (const n of d.added) names.add(n);
      for (const r of d.removed) names.add(r.name);
    }
    return names;
  }

  /** Sends what `phase` calls for; says which names it sent that the client held before and which not. */
  private push(ts: DeltaTypeState, phase: Phase, force: ReadonlySet<string>, replyIfEmpty: boolean): Pushed {
    const snap = this.snapshot();
    if (!snap) return NOTHING_PUSHED;
    const noneHeld = !ts.from && !holdsAny(ts.except);
    // Decisions and ACK bookkeeping use the group's snapshot; the bytes come from this client's view of it.
    const base = this.snapshotToServe(ts, ts.kind, snap.types[ts.kind], ts.pending.size === 0 && noneHeld);
    const t = this.view(base);
    // An ACK, or a push of another type or group: nothing to look at.
    const names = ts.from === base && !ts.except.size && !force.size ? NO_NAMES : this.namesToCheck(ts, base, t, force);
    const upserts: EncodedResource[] = [];
    const removed: string[] = [];
    const pushed = { introduced: [] as string[], updated: [] as string[] };
    /** What the client will hold once this push is out, by name, for the names looked at. */
    const after = new Map<string, string | undefined>();
    for (const name of names) {
      const r = t.resources.get(name);
      const held = this.held(ts, name);
      after.set(name, held);
      if (r) {
        if (ts.sub.selects(r) && (held !== r.version || force.has(name))) {
          upserts.push(r);
          after.set(name, r.version);
          (held === undefined ? pushed.introduced : pushed.updated).push(name);
        }
      } else if (phase === 'all' && (held !== undefined || force.has(name))) {
        removed.push(name);
        after.set(name, undefined);
      }
    }
    // Complete: the rule now reads from `base`; `except` keeps only the names it gets wrong.
    if (phase === 'all') ts.from = base;
    for (const [name, version] of after) this.setHeld(ts, name, version);
    if (!upserts.length && !removed.length && !replyIfEmpty) {
      if (phase === 'all' && ts.pending.size === 0)
        this.opts.registry.unchanged(this.status!, TypeUrls[ts.kind], base.version);
      return NOTHING_PUSHED;
    }

    const nonce = this.nextNonce();
    // The per-stream fields first, in one small buffer the transport writes with the length prefix;
    // then the shared framed resources as they are (fields may come in any order). Many small ones
    // are copied into one buffer instead: one write is faster than a writev of hundreds.
    const head = [versionField(t), TYPE_URL_FIELDS[ts.kind], stringField(DDR.nonce, nonce)];
    for (const n of removed.sort()) head.push(stringField(DDR.removedResources, n));
    head.push(this.controlPlaneField(DDR.controlPlane));
    const ttlMs = this.ttlMs;
    const resources = upserts
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((r) => deltaTtlFramed(r, ttlMs) ?? framed(r));
    const parts: Buffer[] = [Buffer.concat(head)];
    if (resources.length <= SEPARATE_RESOURCES) parts.push(...resources);
    else parts.push(Buffer.concat(resources));
    // What a held request asked for is answered by this upsert: the push that ends the hold need not send it again.
    if (ts.owed && phase === 'upserts') for (const r of upserts) ts.owed.force.delete(r.name);
    ts.pending.set(nonce, base);
    if (ts.pending.size > MAX_PENDING) ts.pending.delete(ts.pending.keys().next().value as string);
    this.opts.registry.sent(this.status!, TypeUrls[ts.kind], t.version, nonce);
    this.sendBytes(parts);
    if (ts.kind === 'runtime') this.syncRenewal(this.ttlHeld(ts) !== undefined);
    return pushed;
  }

  /** The resource with a TTL the client holds, at the version it holds, of the runtime layers, if any. */
  private ttlHeld(ts: DeltaTypeState): EncodedResource | undefined {
    const r = this.snapshot()?.types.runtime.resources.get(OVERRIDE_LAYER);
    return r && servedWithTtl(r) && this.held(ts, r.name) === r.version ? r : undefined;
  }

  /**
   * A heartbeat (DELTA-12): the name and version the client holds of what has a TTL, without a
   * body (Envoy renews its TTL and applies nothing). Only when nothing sent is unanswered: a
   * response on its way carries a TTL of its own.
   */
  protected renew(): void {
    const ts = this.types.get('runtime');
    const r = ts && this.ttlHeld(ts);
    if (!ts || !r) {
      this.syncRenewal(false);
      return;
    }
    if (ts.pending.size) return;
    const nonce = this.nextNonce();
    const snap = this.snapshot()!.types.runtime;
    const head = [versionField(snap), TYPE_URL_FIELDS.runtime, stringField(DDR.nonce, nonce)];
    head.push(this.controlPlaneField(DDR.controlPlane));
    ts.pending.set(nonce, snap);
    this.sendBytes([Buffer.concat(head), deltaHeartbeat(r, this.ttlMs)]);
  }
}
