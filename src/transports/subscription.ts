import { shortHash } from '../shared/hash.ts';
import { DREQ, stringField } from '../xds/wire.ts';

/**
 * What one stream has asked for, for one type. Shared by every transport's state machine so the
 * wildcard rules live in one place (xDS protocol, "How the client specifies what resources to
 * return"): an empty first request means wildcard for Listener/Cluster only; once any name has been
 * requested, an empty list means "nothing"; "*" is the explicit wildcard.
 */
export class Subscription {
  wildcard = false;
  /** Possibly shared with other streams (see `interned`): replaced, never changed in place, while shared. */
  private named: Set<string> = new Set();
  private shared = false;
  private everNamed = false;

  constructor(private readonly wildcardAllowed: boolean) {}

  get names(): ReadonlySet<string> {
    return this.named;
  }

  /** The set to change in place: this subscription's own. */
  private own(): Set<string> {
    if (this.shared) {
      this.named = new Set(this.named);
      this.shared = false;
    }
    return this.named;
  }

  /** Replaces the subscription with a SotW request's names; returns the names added (`*` for the wildcard). */
  setSotw(resourceNames: readonly string[]): string[] {
    // ACKs repeat the current names: recognise that without rebuilding the set.
    if (
      this.everNamed &&
      !this.wildcard &&
      resourceNames.length === this.names.size &&
      (inOrder(resourceNames, this.names) || resourceNames.every((n) => n !== '*' && this.names.has(n)))
    )
      return [];
    if (!this.everNamed && resourceNames.length === 0 && this.wildcard === this.wildcardAllowed) return [];
    const wasWildcard = this.wildcard;
    const before = this.named;
    if (resourceNames.length === 0 && !this.everNamed) {
      this.wildcard = this.wildcardAllowed;
      this.named = new Set();
      this.shared = false;
    } else {
      this.everNamed = true;
      this.wildcard = this.wildcardAllowed && resourceNames.includes('*');
      const names = resourceNames.filter((n) => n !== '*');
      const sharedSet = interned(names);
      this.named = sharedSet ?? new Set(names);
      this.shared = sharedSet !== undefined;
    }
    const added = [...this.named].filter((n) => !before.has(n));
    if (this.wildcard && !wasWildcard) added.push('*');
    return added;
  }

  /**
   * Applies a delta request's subscribe/unsubscribe lists (honoured on every request, even with a
   * stale nonce: DELTA-03). Returns every name this request subscribes explicitly (already
   * subscribed or not: each must be answered, DELTA-04) and whether the wildcard was switched on.
   */
  applyDelta(
    subscribe: readonly string[],
    unsubscribe: readonly string[],
    first: boolean,
  ): { added: string[]; wildcardAdded: boolean } {
    const wasWildcard = this.wildcard;
    if (first && subscribe.length === 0 && unsubscribe.length === 0 && !this.everNamed) {
      this.wildcard = this.wildcardAllowed; // legacy wildcard: an empty first request
    }
    const added: string[] = [];
    let changed = false;
    for (const n of subscribe) {
      this.everNamed = true;
      if (n === '*') this.wildcard = this.wildcardAllowed;
      else {
        if (!this.named.has(n)) {
          this.own().add(n);
          changed = true;
        }
        added.push(n);
      }
    }
    for (const n of unsubscribe) {
      if (n === '*') this.wildcard = false;
      else if (this.named.has(n)) {
        this.own().delete(n);
        changed = true;
      }
    }
    // Streams of a group name the same resources, in whatever order their requests came: share one set.
    if (changed && !this.shared && this.named.size >= INTERN_FROM) {
      const sharedSet = interned([...this.named].sort());
      if (sharedSet) {
        this.named = sharedSet;
        this.shared = true;
      }
    }
    return { added, wildcardAdded: this.wildcard && !wasWildcard };
  }

  /**
   * The names as a SotW request lists them (DiscoveryRequest.resource_names, in this set's order),
   * encoded once per shared set: what a stream's ACKs repeat, compared as bytes instead of decoded
   * (grpc/requests.ts). Undefined for a set of its own (few names), a wildcard or nothing named.
   */
  encodedNames(): Buffer | undefined {
    if (!this.shared || this.wildcard) return undefined;
    let bytes = ENCODED.get(this.named);
    if (!bytes)
      ENCODED.set(this.named, (bytes = Buffer.concat([...this.named].map((n) => stringField(DREQ.resourceNames, n)))));
    return bytes;
  }

  /** The names in the set's order (for a shared set, one array for every stream). */
  orderedNames(): readonly string[] {
    if (!this.shared) return [...this.named];
    let list = ORDERED.get(this.named);
    if (!list) ORDERED.set(this.named, (list = [...this.named]));
    return list;
  }

  /** Whether the subscription asks for `r`: a wildcard does not cover resources only sent by name. */
  selects(r: { readonly name: string; readonly namedOnly?: boolean }): boolean {
    return (this.wildcard && !r.namedOnly) || this.named.has(r.name);
  }

  /** Whether a resource of that name is of interest. */
  covers(name: string): boolean {
    return this.wildcard || this.names.has(name);
  }

  /** A fingerprint of the subscription, to tell cheaply whether a request changed it. */
  get size(): number {
    return this.names.size + (this.wildcard ? 1 : 0);
  }

  isEmpty(): boolean {
    return !this.wildcard && this.names.size === 0;
  }
}

/**
 * Whether `names` lists the set's names in the set's order, as a client repeating its request does:
 * a comparison of strings, cheaper than hashing each freshly decoded name to look it up (a
 * thousand names on every EDS ACK).
 */
function inOrder(names: readonly string[], set: ReadonlySet<string>): boolean {
  let i = 0;
  for (const n of set) if (names[i++] !== n) return false;
  return true;
}

/** Of shared sets only: they are never changed in place (`own` copies one first). */
const ENCODED = new WeakMap<ReadonlySet<string>, Buffer>();
const ORDERED = new WeakMap<ReadonlySet<string>, readonly string[]>();

/** Below this many names a set of one's own costs less than looking one up. */
const INTERN_FROM = 32;
const pool = new Map<string, WeakRef<Set<string>>>();
const dropped = new FinalizationRegistry<string>((key) => {
  if (pool.get(key)?.deref() === undefined) pool.delete(key);
});

/**
 * One set for every stream that names the same resources in the same order: thousands of Envoys
 * of a group each name every cluster's endpoints, and ten thousand names held per stream were
 * hundreds of kilobytes each. Kept while some subscription uses it.
 */
function interned(names: readonly string[]): Set<string> | undefined {
  if (names.length < INTERN_FROM) return undefined;
  const key = shortHash(names.join('\u0000'));
  const hit = pool.get(key)?.deref();
  if (hit && hit.size === names.length && names.every((n) => hit.has(n))) return hit;
  const set = new Set(names);
  if (set.size !== names.length) return undefined; // duplicates: keep it out of the pool
  pool.set(key, new WeakRef(set));
  dropped.register(set, key);
  return set;
}
