/**
 * What every xDS stream shares, whatever its protocol variant (SotW or delta, ADS or per-type):
 * node identity from the first request, its group (re-resolved on every published config),
 * status registration, nonces, and the make-before-break push order.
 */
import type { NodeIdentity } from '../model/node-groups.ts';
import { viewOf, type ConfigSourceVariant } from '../snapshot/config-sources.ts';
import { derive } from '../snapshot/derived.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import type { GroupSnapshot, TypeSnapshot } from '../snapshot/group-snapshot.ts';
import { groupSnapshotFor, type PublishedConfig, type SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { StreamRegistry, StreamStatus } from '../status/node-registry.ts';
import { TypeUrls, kindOfTypeUrl, type ResourceKind } from '../xds/resource-types.ts';
import { DDR, DR, lenField, stringField } from '../xds/wire.ts';
import type { ClientCertificate } from '../security/node-identity.ts';
import { displayUserAgent, nodeLimitViolation } from '../security/node-limits.ts';
import type { GroupAckTracker } from './group-ack-tracker.ts';
import { recordReply, type Reply } from './replies.ts';
import { DEFAULT_WARMING_HOLD_MS, WarmingHold, type HoldOutcome } from './warming-hold.ts';
import { DEFAULT_OVERRIDE_TTL_MS, TtlRenewal } from './ttl.ts';

/** Per-type stream state that NACK containment may hold back at an older snapshot. */
export interface ContainmentHolder {
  heldBack?: { snapshot: TypeSnapshot; instead: string };
}

export const SECRETS_REFUSED =
  'TLS secrets are served only to authenticated clients (mTLS with node identities); this transport did not ' +
  'authenticate the node';

export interface NodeInput extends NodeIdentity {
  userAgent?: string;
}

export interface StreamOptions {
  cache: SnapshotCache;
  registry: StreamRegistry;
  transport: string;
  peer: string;
  /** Per-type services fix the type; ADS takes it from each request. */
  fixedKind?: ResourceKind;
  /**
   * Writes one response, the concatenation of `parts` (shared encoded bytes first: the transport
   * need not copy them); `flushed` is called once the transport handed it to the connection (for
   * a client that does not read, that stops when its flow-control window is full).
   */
  send: (parts: readonly Buffer[], flushed: () => void) => void;
  /**
   * Called when the stream has been unable to deliver a newer config for `maxBehindMs` (the client
   * stopped reading): the transport ends it so the client reconnects and gets the current state.
   */
  onStuck?: (behindMs: number) => void;
  maxBehindMs?: number;
  /** NACK containment policy, shared by all streams of the server. */
  acks?: GroupAckTracker;
  /** The client certificate the transport verified (mTLS), for the fleet status. */
  clientCertificate?: ClientCertificate;
  /** Refuses a node identity the transport's credentials do not allow (returns the reason). */
  authorize?: (node: NodeIdentity) => string | undefined;
  /** TLS secrets (private keys) only to clients the transport authenticated. */
  secretsAllowed?: boolean;
  /** Told when a request is refused without ending the stream (an ADS request for secrets). */
  onRefusal?: (reason: string) => void;
  /** How references in served resources must point for this client (from its node); none keeps ADS. */
  variantFor?: (node: NodeIdentity) => ConfigSourceVariant;
  /** Longest wait of listeners and routes for the endpoints of new clusters (ADS only; warming-hold.ts). */
  warmingHoldMs?: number;
  /** The xDS TTL of overrides (ttl.ts; default DEFAULT_OVERRIDE_TTL_MS). */
  overrideTtlMs?: number;
}

/** derive() spaces of the encoded control_plane field, by field number (SotW's, delta's). */
const CONTROL_PLANE_SPACES: Record<number, string> = {
  [DR.controlPlane]: 'control-plane-sotw',
  [DDR.controlPlane]: 'control-plane-delta',
};

/** The encoded control_plane field (`ControlPlane { identifier }`). */
const makeControlPlane = (_cfg: unknown, field: number, identifier: string) =>
  lenField(field, stringField(1, identifier));

export abstract class StreamBase {
  protected status?: StreamStatus;
  /** Renews what the client holds with a TTL (ttl.ts), while it holds any. */
  protected renewal?: TtlRenewal;
  protected node?: NodeIdentity;
  protected group?: string;
  /** How this client fetches what resources reference (set with its node). */
  private variant?: ConfigSourceVariant;
  protected closed = false;
  private nonceCounter = 0;
  private secretsRefused = false;
  /** Responses written but not yet flushed to the connection. */
  private unflushed = 0;
  /**
   * Set when configs were published while responses were still unflushed: the stream catches up
   * from the newest config once they flush, skipping the versions in between (at most the newest
   * undelivered state is kept per stream); each type's state says what its client holds.
   */
  private behind?: { timer?: NodeJS.Timeout };
  /** The config `served` was resolved for, and this stream's group snapshot in it. */
  private servedCfg?: PublishedConfig;
  private served?: GroupSnapshot;
  private servedControlPlane?: string;
  private unsubscribe?: () => void;
  /**
   * Only an aggregated stream can order types: per-type streams of one proxy are separate
   * connections, and Envoy asks for endpoints on the EDS stream whatever the routes stream does.
   */
  protected readonly hold?: WarmingHold;

  constructor(protected readonly opts: StreamOptions) {
    if (!opts.fixedKind && opts.warmingHoldMs !== 0)
      this.hold = new WarmingHold(
        opts.warmingHoldMs ?? DEFAULT_WARMING_HOLD_MS,
        (cluster) => this.claDelivered(cluster),
        (outcome) => this.released(outcome),
        (active) => {
          if (this.status) this.opts.registry.waiting(this.status, 'warming', active);
        },
      );
  }

  private released(outcome: HoldOutcome): void {
    this.opts.registry.warmingHeld(outcome);
    const snap = this.snapshot();
    if (snap && !this.closed) this.afterWarming(snap);
  }

  /** Pushes what a warming hold kept back (listeners, routes, the CDS that drops old clusters). */
  protected abstract afterWarming(snap: GroupSnapshot): void;

  /** Whether the stream has sent the CLA of an EDS cluster (true for clusters without one): what a hold waits for. */
  protected abstract claDelivered(cluster: string): boolean;

  get streamStatus(): StreamStatus | undefined {
    return this.status;
  }

  /** Registers the stream on its first request; Envoy may send the node only then (SOTW-13). */
  protected ensureStarted(n: NodeInput | undefined): void {
    if (this.node) return;
    if (!n?.id) throw new FleetError(ErrorCodes.BAD_REQUEST, 'the first request of a stream must carry node.id');
    const node = {
      id: n.id,
      cluster: n.cluster ?? '',
      metadata: n.metadata ?? {},
      ...(n.locality && { locality: n.locality }),
    };
    const tooLarge = nodeLimitViolation(node);
    if (tooLarge) throw new FleetError(ErrorCodes.BAD_REQUEST, tooLarge);
    const refusal = this.opts.authorize?.(node);
    if (refusal) throw new FleetError(ErrorCodes.FORBIDDEN, refusal);
    this.node = node;
    this.variant = this.opts.variantFor?.(node);
    const cfg = this.opts.cache.current;
    this.group = cfg ? cfg.resolver.resolve(this.node) : 'default';
    this.status = this.opts.registry.open({
      nodeId: n.id,
      nodeCluster: this.node.cluster,
      ...(node.locality && { locality: node.locality }),
      group: this.group,
      transport: this.opts.transport,
      peer: this.opts.peer,
      userAgent: displayUserAgent(n.userAgent ?? ''),
      // A node the transport bound to a client certificate (authorize) is authenticated.
      authenticated: this.opts.authorize !== undefined,
      ...(this.opts.clientCertificate ? { clientCertificate: this.opts.clientCertificate } : {}),
    });
    this.unsubscribe = this.opts.cache.onPublish((next) => this.publish(next));
  }

  /** The kind a request is about; undefined for types we do not serve. */
  protected kindOf(typeUrl: string | undefined): ResourceKind | undefined {
    const url = typeUrl || (this.opts.fixedKind ? TypeUrls[this.opts.fixedKind] : '');
    if (!url) throw new FleetError(ErrorCodes.BAD_REQUEST, 'type_url is required on an aggregated stream');
    const kind = kindOfTypeUrl(url);
    if (this.opts.fixedKind && kind !== this.opts.fixedKind)
      throw new FleetError(ErrorCodes.BAD_REQUEST, `this service serves ${TypeUrls[this.opts.fixedKind]}, not ${url}`);
    if (kind === 'secret' && !this.opts.secretsAllowed) {
      // Never hand private keys to a client nobody authenticated. On ADS the rest of the stream goes on.
      if (this.opts.fixedKind) throw new FleetError(ErrorCodes.FORBIDDEN, SECRETS_REFUSED);
      if (!this.secretsRefused) this.opts.onRefusal?.(SECRETS_REFUSED);
      this.secretsRefused = true;
      return undefined;
    }
    return kind;
  }

  /** What this stream's node is served now: its group's snapshot, or its stage's during a rollout. */
  protected snapshot(): GroupSnapshot | undefined {
    const cfg = this.opts.cache.current;
    if (!cfg || !this.node) return undefined;
    if (cfg !== this.servedCfg) this.resolveServed(cfg);
    return this.served;
  }

  private resolveServed(cfg: PublishedConfig): void {
    const { snapshot, stage, controlPlane } = groupSnapshotFor(cfg, this.node!, this.group ?? 'default');
    this.servedCfg = cfg;
    this.served = snapshot;
    this.servedControlPlane = controlPlane;
    const s = this.status;
    if (s && (s.group !== this.group || s.stage !== stage))
      this.opts.registry.placed(s, this.group ?? 'default', stage);
  }

  /**
   * The type snapshot to serve a stream's first response of `kind` from: normally the current
   * one; with NACK containment on, the last version this group ACKed if the current one was
   * NACKed by a node of the group.
   */
  protected firstServe(kind: ResourceKind, current: TypeSnapshot): TypeSnapshot {
    return this.opts.acks?.firstServe(this.group ?? 'default', kind, current) ?? current;
  }

  /**
   * The snapshot to serve a type from: the one NACK containment held the stream back at while the
   * version it stands in for is current, otherwise the current one; on the stream's first response
   * of the type, possibly the group's last ACKed version.
   */
  protected snapshotToServe(
    state: ContainmentHolder,
    kind: ResourceKind,
    current: TypeSnapshot,
    first: boolean,
  ): TypeSnapshot {
    if (state.heldBack && state.heldBack.instead !== current.version) state.heldBack = undefined;
    if (state.heldBack) return state.heldBack.snapshot;
    if (!first) return current;
    const chosen = this.firstServe(kind, current);
    if (chosen !== current) state.heldBack = { snapshot: chosen, instead: current.version };
    return chosen;
  }

  /**
   * The response's control_plane field (DiscoveryResponse 6, DeltaDiscoveryResponse 7) naming the
   * served version and its git commit, encoded once per published config.
   */
  protected controlPlaneField(field: number): Buffer {
    const cfg = this.opts.cache.current;
    if (!cfg || !this.node) return Buffer.alloc(0);
    if (cfg !== this.servedCfg) this.resolveServed(cfg);
    const identifier = this.servedControlPlane;
    if (!identifier) return Buffer.alloc(0);
    // Keyed by the config's own identifier string, whose hash V8 keeps: no key is built per stream.
    return derive(cfg, CONTROL_PLANE_SPACES[field] ?? `control-plane-${field}`, identifier, makeControlPlane, field);
  }

  /** What this client is sent of a type snapshot: config sources pointed the way it fetches. */
  protected view(t: TypeSnapshot): TypeSnapshot {
    return viewOf(t, this.variant);
  }

  /** The client answered a response of ours (ACK or NACK). */
  protected recordReply(r: Reply): void {
    recordReply(this.opts, this.status!, this.group ?? 'default', r);
  }

  protected nextNonce(): string {
    return String(++this.nonceCounter);
  }

  private publish(cfg: PublishedConfig): void {
    if (this.closed || !this.node) return;
    this.group = cfg.resolver.resolve(this.node);
    this.resolveServed(cfg);
    if (this.unflushed > 0) {
      // The client has not taken the last response yet: remember to catch up, push nothing now.
      if (!this.behind) this.fallBehind();
      return;
    }
    if (this.served) this.onConfig(this.served);
  }

  private fallBehind(): void {
    const limit = this.opts.maxBehindMs;
    const started = Date.now();
    const timer =
      limit && this.opts.onStuck
        ? setTimeout(() => {
            if (this.behind && !this.closed) this.opts.onStuck!(Date.now() - started);
          }, limit)
        : undefined;
    timer?.unref();
    this.behind = { timer };
    if (this.status) this.opts.registry.waiting(this.status, 'behind', true);
  }

  private flushed(): void {
    if (--this.unflushed > 0 || !this.behind || this.closed) return;
    const { timer } = this.behind;
    clearTimeout(timer);
    this.behind = undefined;
    if (this.status) this.opts.registry.waiting(this.status, 'behind', false);
    const snap = this.snapshot();
    if (snap) this.onConfig(snap);
  }

  /** A new config was published; push what changed for this stream. */
  protected abstract onConfig(snap: GroupSnapshot): void;

  protected sendBytes(parts: readonly Buffer[]): void {
    if (this.closed) return;
    this.unflushed++;
    this.opts.send(parts, this.onFlushed);
  }

  /** The TTL of overrides on this stream. */
  protected get ttlMs(): number {
    return this.opts.overrideTtlMs ?? DEFAULT_OVERRIDE_TTL_MS;
  }

  /** Starts or stops renewals as the client comes to hold, or stops holding, a resource with a TTL. */
  protected syncRenewal(holding: boolean): void {
    if (!holding && !this.renewal) return;
    (this.renewal ??= new TtlRenewal(this.ttlMs, () => this.renew())).sync(holding && !this.closed);
  }

  /** Renews what the client holds with a TTL (when it is up to date). */
  protected abstract renew(): void;

  /** One callback for every write of the stream (a push made one per stream before). */
  private readonly onFlushed = (): void => this.flushed();

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.hold?.stop();
    this.renewal?.stop();
    clearTimeout(this.behind?.timer);
    this.behind = undefined;
    this.unsubscribe?.();
    if (this.status) this.opts.registry.close(this.status);
  }
}
