/**
 * Endpoints that register at run time: who may join a service is the Service's `registration` in
 * git; who is there is kept here. Each endpoint has a state:
 *
 *   healthy   -- heartbeats arrive within the TTL and its own check passes
 *   unhealthy -- its check fails, or no heartbeat for a TTL (removed after a second TTL without one)
 *   draining  -- it asked to leave: no new requests; removed once the drain time is over
 *
 * A change of membership or of an endpoint's state is reported (`onChange`) and stored; a heartbeat
 * that changes nothing is neither: many heartbeats, one push only when something changed.
 */
import { BlockList, isIP } from 'node:net';
import { canonicalEndpoint, canonicalIp, cidrRange, parseHostPort } from '../shared/addresses.ts';
import type { RegistrationDoc } from '../model/schema.ts';
import { parseDurationMs } from '../shared/duration.ts';
import { ErrorCodes, FleetError } from '../shared/errors.ts';
import { compileGlob } from '../shared/glob.ts';
import type { RegistrationStore, StoredRegistration } from '../store/registrations.ts';

export type Health = StoredRegistration['health'];

export const DEFAULT_TTL = '30s';
/** Registered endpoints one service takes at the most. */
export const MAX_PER_SERVICE = 10_000;
export const DEFAULT_DRAIN = '30s';

/** What a VM sends with each heartbeat. */
export interface RegisterRequest {
  address: string;
  weight?: number;
  region?: string;
  zone?: string;
  subZone?: string;
  /** Its own check's verdict (default healthy). */
  health?: 'healthy' | 'unhealthy';
}

/** How the caller proved who it is: its client certificate's names, and/or a bearer token's sha256. */
export interface Credentials {
  certificateNames: readonly string[];
  tokenSha256?: string;
}

/** Where a call comes from: what `registration.ownAddress` compares an endpoint's address with. */
export interface Origin {
  /** The connection's peer address. */
  peer?: string;
  /** The IP addresses of the caller's verified client certificate. */
  certificateIps: readonly string[];
}

/** A registered endpoint as the EDS translation needs it. */
export interface Member {
  address: string;
  weight?: number;
  region?: string;
  zone?: string;
  subZone?: string;
  health: Health;
}

/** What a state is after `ms` without a heartbeat, given the TTL and drain time: the state machine. */
export function effectiveState(
  e: Pick<StoredRegistration, 'health' | 'lastSeen' | 'drainUntil'>,
  now: number,
  ttlMs: number,
): Health | 'gone' {
  if (e.health === 'draining') return now >= (e.drainUntil ?? 0) ? 'gone' : 'draining';
  const silent = now - e.lastSeen;
  if (silent >= 2 * ttlMs) return 'gone';
  if (silent >= ttlMs) return 'unhealthy';
  return e.health;
}

/** Whether `ip` is the caller's: its connection's address or an IP of its certificate. */
function isOwnAddress(ip: string, origin: Origin | undefined): boolean {
  if (!origin) return false;
  const own = [origin.peer, ...origin.certificateIps].flatMap((a) => (a ? [canonicalIp(a)] : []));
  return own.includes(ip);
}

/**
 * Addresses no registration may point a service at unless its policy names them in `addresses`
 * with a block no wider than the range: a proxy would send a service's traffic to itself (its admin
 * port), to a cloud metadata service, or to every host of a network.
 */
const RESERVED: readonly { range: string; what: string }[] = [
  { range: '0.0.0.0/8', what: 'an unspecified address' },
  { range: '127.0.0.0/8', what: 'a loopback address' },
  { range: '169.254.0.0/16', what: 'a link-local address (cloud metadata services answer there)' },
  { range: '224.0.0.0/4', what: 'a multicast address' },
  { range: '240.0.0.0/4', what: 'a reserved or broadcast address' },
  { range: '::/128', what: 'an unspecified address' },
  { range: '::1/128', what: 'a loopback address' },
  { range: 'fe80::/10', what: 'a link-local address' },
  { range: 'ff00::/8', what: 'a multicast address' },
  { range: 'fd00:ec2::254/128', what: 'a cloud metadata address' },
];

const familyOf = (ip: string) => (isIP(ip) === 6 ? 'ipv6' : 'ipv4');

function blockOf(cidr: string): { list: BlockList; len: number } {
  const r = cidrRange(cidr)!;
  const list = new BlockList();
  list.addSubnet(r.address_prefix, r.prefix_len, familyOf(r.address_prefix));
  return { list, len: r.prefix_len };
}

const RESERVED_BLOCKS = RESERVED.map((r) => ({ ...r, ...blockOf(r.range) }));

/**
 * Each block of a policy's `addresses`, compiled once per policy document (the same object while
 * it is served): what an address must be in, and which reserved ranges the policy names.
 */
const POLICY_BLOCKS = new WeakMap<RegistrationDoc, { list: BlockList; len: number }[]>();

function policyBlocks(policy: RegistrationDoc): { list: BlockList; len: number }[] {
  let b = POLICY_BLOCKS.get(policy);
  if (!b) POLICY_BLOCKS.set(policy, (b = (policy.addresses ?? []).map(blockOf)));
  return b;
}

/** Why `ip` may not be registered under `policy` (a reserved range it does not name), or undefined. */
function reservedRefusal(ip: string, policy: RegistrationDoc): string | undefined {
  const family = familyOf(ip);
  const reserved = RESERVED_BLOCKS.find((r) => r.list.check(ip, family));
  if (!reserved) return undefined;
  const named = policyBlocks(policy).some((b) => b.len >= reserved.len && b.list.check(ip, family));
  return named
    ? undefined
    : `${ip} is ${reserved.what}: a service takes one only when its registration.addresses names it ` +
        `(a block within ${reserved.range})`;
}

const key = (service: string, address: string) => `${service}\u0000${address}`;

/** Told of every change and heartbeat: how replicas share membership (shared-membership.ts). */
export interface MembershipObserver {
  changed(e: StoredRegistration): void;
  removed(service: string, address: string): void;
  seen(e: StoredRegistration): void;
  /** Writes what it was told so far where the other replicas read it; whether that worked. */
  flush(): Promise<boolean>;
}

export class Membership {
  private readonly entries = new Map<string, StoredRegistration>();
  /** Set when replicas share membership. */
  observer?: MembershipObserver;
  /** The state last reported for each entry (what proxies were told). */
  private readonly told = new Map<string, Health>();

  constructor(
    /** The registration policy of a service in the served config (undefined: it takes none). */
    private readonly policyOf: (service: string) => RegistrationDoc | undefined,
    private readonly onChange: (services: ReadonlySet<string>) => void,
    private readonly store?: RegistrationStore,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Endpoints known before a restart, each given a fresh TTL: a live one heartbeats within it, so a
   * restart of fleetxds removes none that is alive; one that died meanwhile goes after its TTL.
   */
  restore(): void {
    const t = this.now();
    for (const r of this.store?.list() ?? []) {
      const e = { ...r, lastSeen: r.health === 'draining' ? r.lastSeen : t };
      this.entries.set(key(r.service, r.address), e);
      this.told.set(key(r.service, r.address), r.health);
    }
  }

  /** Who the caller is, for `service`: an allowed certificate name or token, else a FleetError (403). */
  authorize(service: string, cred: Credentials): string {
    const policy = this.policyOf(service);
    if (!policy) throw new FleetError(ErrorCodes.NOT_REGISTERED, `service "${service}" takes no registrations`);
    for (const n of cred.certificateNames) if ((policy.identities ?? []).some((g) => compileGlob(g).test(n))) return n;
    if (cred.tokenSha256 && policy.tokens?.includes(cred.tokenSha256)) return `token:${cred.tokenSha256.slice(0, 12)}`;
    throw new FleetError(
      ErrorCodes.FORBIDDEN,
      cred.certificateNames.length || cred.tokenSha256
        ? `not allowed to register into service "${service}"`
        : `registering into service "${service}" needs a client certificate or a token it allows`,
    );
  }

  /**
   * A registration or heartbeat by `identity` (what authorize returned), from `origin`. The address
   * is kept in its canonical spelling, which the caller gets back.
   */
  heartbeat(service: string, req: RegisterRequest, identity: string, origin?: Origin): Health {
    const policy = this.policyOf(service)!;
    const address = canonicalEndpoint(req.address);
    const hp = address && parseHostPort(address);
    if (!hp) throw new FleetError(ErrorCodes.BAD_REQUEST, `"${req.address}" is not IP:port`);
    if (policy.ports && !policy.ports.includes(hp.port))
      throw new FleetError(ErrorCodes.FORBIDDEN, `port ${hp.port} is not one service "${service}" takes`);
    const family = familyOf(hp.host);
    if (policy.addresses && !policyBlocks(policy).some((b) => b.list.check(hp.host, family)))
      throw new FleetError(ErrorCodes.FORBIDDEN, `${hp.host} is outside the addresses service "${service}" takes`);
    const reserved = reservedRefusal(hp.host, policy);
    if (reserved) throw new FleetError(ErrorCodes.FORBIDDEN, reserved);
    if (policy.ownAddress && !isOwnAddress(hp.host, origin))
      throw new FleetError(
        ErrorCodes.FORBIDDEN,
        `service "${service}" takes only the caller's own address (its connection's or a certificate IP), ` +
          `not ${hp.host}`,
      );
    const k = key(service, address);
    const before = this.entries.get(k);
    if (before) this.checkOwner(before, identity, policy);
    // Even an allowed caller cannot grow a service without bound.
    if (!before && this.countOf(service) >= MAX_PER_SERVICE)
      throw new FleetError(
        ErrorCodes.FORBIDDEN,
        `service "${service}" has ${MAX_PER_SERVICE} registered endpoints, the most one service takes`,
      );
    const entry: StoredRegistration = {
      service,
      address,
      ...(req.weight !== undefined && { weight: req.weight }),
      ...(req.region !== undefined && { region: req.region }),
      ...(req.zone !== undefined && { zone: req.zone }),
      ...(req.subZone !== undefined && { subZone: req.subZone }),
      // A draining endpoint stays draining: heartbeats do not bring it back.
      health: before?.health === 'draining' ? 'draining' : (req.health ?? 'healthy'),
      identity,
      lastSeen: this.now(),
      ...(before?.drainUntil !== undefined && { drainUntil: before.drainUntil }),
      updatedAt: before?.updatedAt ?? this.now(),
    };
    this.entries.set(k, entry);
    const changed =
      !before ||
      this.told.get(k) !== entry.health ||
      before.weight !== entry.weight ||
      before.region !== entry.region ||
      before.zone !== entry.zone ||
      before.subZone !== entry.subZone;
    if (changed) this.commit(new Set([service]), [{ ...entry, updatedAt: this.now() }]);
    else this.observer?.seen(entry);
    return entry.health;
  }

  /** Stops new requests to the endpoint; it is removed once the service's drain time is over. */
  drain(service: string, address: string, identity: string): void {
    const k = key(service, canonicalEndpoint(address) ?? address);
    const e = this.entries.get(k);
    if (!e) throw new FleetError(ErrorCodes.NOT_REGISTERED, `${address} is not registered in service "${service}"`);
    const policy = this.policyOf(service);
    if (policy) this.checkOwner(e, identity, policy);
    if (e.health === 'draining') return;
    const drainMs = parseDurationMs(policy?.drain ?? DEFAULT_DRAIN) ?? 30_000;
    const entry = { ...e, health: 'draining' as const, drainUntil: this.now() + drainMs, updatedAt: this.now() };
    this.entries.set(k, entry);
    this.commit(new Set([service]), [entry]);
  }

  deregister(service: string, address: string, identity: string): void {
    const k = key(service, canonicalEndpoint(address) ?? address);
    const e = this.entries.get(k);
    if (!e) return;
    const policy = this.policyOf(service);
    if (policy) this.checkOwner(e, identity, policy);
    this.entries.delete(k);
    this.told.delete(k);
    // The stored key is the canonical address, whatever spelling the caller used.
    this.store?.remove(service, e.address);
    this.observer?.removed(service, e.address);
    this.onChange(new Set([service]));
  }

  /**
   * Resolves once the changes made so far are shared with the other replicas (true at once without
   * replicas): a drain or removal is answered after it, so a replica killed right after answering
   * cannot leave the others serving the endpoint.
   */
  shared(): Promise<boolean> {
    return this.observer ? this.observer.flush() : Promise.resolve(true);
  }

  /** Applies the TTLs and drain times; reports the services whose endpoints changed state. */
  sweep(): void {
    const t = this.now();
    const changed = new Set<string>();
    const stored: StoredRegistration[] = [];
    for (const [k, e] of this.entries) {
      const policy = this.policyOf(e.service);
      const ttlMs = parseDurationMs(policy?.ttl ?? DEFAULT_TTL) ?? 30_000;
      const state = policy ? effectiveState(e, t, ttlMs) : 'gone';
      if (state === 'gone') {
        this.entries.delete(k);
        this.told.delete(k);
        this.store?.remove(e.service, e.address);
        this.observer?.removed(e.service, e.address);
        changed.add(e.service);
      } else if (this.told.get(k) !== state) {
        this.told.set(k, state);
        stored.push({ ...e });
        changed.add(e.service);
      }
    }
    for (const e of stored) this.store?.put(e);
    if (changed.size) this.onChange(changed);
  }

  /** The service's registered endpoints, by address, with the state proxies are told. */
  members(service: string): Member[] {
    const out: Member[] = [];
    for (const [k, e] of this.entries)
      if (e.service === service)
        out.push({
          address: e.address,
          health: this.told.get(k) ?? e.health,
          ...(e.weight !== undefined && { weight: e.weight }),
          ...(e.region !== undefined && { region: e.region }),
          ...(e.zone !== undefined && { zone: e.zone }),
          ...(e.subZone !== undefined && { subZone: e.subZone }),
        });
    return out.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  }

  /** An endpoint belongs to the identity that registered it, unless the policy lets instances manage each other. */
  private checkOwner(e: StoredRegistration, identity: string, policy: RegistrationDoc): void {
    if (policy.manageEachOther || e.identity === identity) return;
    throw new FleetError(
      ErrorCodes.FORBIDDEN,
      `${e.address} in service "${e.service}" was registered by another identity ` +
        '(registration.manageEachOther lets instances manage each other)',
    );
  }

  /** A service's registered endpoints (counted when one joins: joining is rare, heartbeats are not). */
  private countOf(service: string): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.service === service) n++;
    return n;
  }

  /** Every registration, for the status API. */
  list(): (StoredRegistration & { state: Health })[] {
    return [...this.entries].map(([k, e]) => ({ ...e, state: this.told.get(k) ?? e.health }));
  }

  /**
   * What another replica knows (the shared store's rows): entries it has that this one lacks join;
   * a newer heartbeat counts; a newer change of state or attributes wins; an entry the store no
   * longer has is removed unless it changed here within `settleMs` (not written there yet).
   */
  merge(rows: readonly StoredRegistration[], settleMs: number): void {
    const t = this.now();
    const changed = new Set<string>();
    const present = new Set<string>();
    for (const row of rows) {
      const k = key(row.service, row.address);
      present.add(k);
      const local = this.entries.get(k);
      if (!local || (row.updatedAt ?? 0) > (local.updatedAt ?? 0)) {
        this.entries.set(k, { ...row, lastSeen: Math.max(row.lastSeen, local?.lastSeen ?? 0) });
        this.store?.put(this.entries.get(k)!);
        changed.add(row.service);
      } else {
        // Newer here (a change this replica stored but could not share before a restart): shared now.
        if ((local.updatedAt ?? 0) > (row.updatedAt ?? 0)) this.observer?.changed(local);
        if (row.lastSeen > local.lastSeen) this.entries.set(k, { ...local, lastSeen: row.lastSeen });
      }
    }
    for (const [k, e] of this.entries)
      if (!present.has(k) && t - (e.updatedAt ?? 0) > settleMs) {
        this.entries.delete(k);
        this.told.delete(k);
        this.store?.remove(e.service, e.address);
        changed.add(e.service);
      }
    // States follow from the merged entries at the next sweep; new and removed entries now.
    if (changed.size) {
      for (const [k, e] of this.entries) {
        if (!changed.has(e.service)) continue;
        const state = effectiveState(e, t, this.ttlOf(e.service));
        if (state !== 'gone') this.told.set(k, state);
      }
      this.onChange(changed);
    }
  }

  private ttlOf(service: string): number {
    return parseDurationMs(this.policyOf(service)?.ttl ?? DEFAULT_TTL) ?? 30_000;
  }

  private commit(services: ReadonlySet<string>, entries: StoredRegistration[]): void {
    for (const e of entries) {
      this.entries.set(key(e.service, e.address), e);
      this.told.set(key(e.service, e.address), e.health);
      this.store?.put(e);
      this.observer?.changed(e);
    }
    this.onChange(services);
  }
}
