/**
 * What one stream has asked for, for one type. Shared by every transport's state machine so the
 * wildcard rules live in one place (xDS protocol, "How the client specifies what resources to
 * return"): an empty first request means wildcard for Listener/Cluster only; once any name has been
 * requested, an empty list means "nothing"; "*" is the explicit wildcard.
 */
export class Subscription {
  wildcard = false;
  readonly names = new Set<string>();
  private everNamed = false;

  constructor(private readonly wildcardAllowed: boolean) {}

  /** Replaces the subscription with a SotW request's names; returns the names added (`*` for the wildcard). */
  setSotw(resourceNames: readonly string[]): string[] {
    // ACKs repeat the current names: recognise that without rebuilding the set.
    if (
      this.everNamed &&
      !this.wildcard &&
      resourceNames.length === this.names.size &&
      resourceNames.every((n) => n !== '*' && this.names.has(n))
    )
      return [];
    if (!this.everNamed && resourceNames.length === 0 && this.wildcard === this.wildcardAllowed) return [];
    const wasWildcard = this.wildcard;
    const before = new Set(this.names);
    this.names.clear();
    if (resourceNames.length === 0 && !this.everNamed) {
      this.wildcard = this.wildcardAllowed;
    } else {
      this.everNamed = true;
      this.wildcard = this.wildcardAllowed && resourceNames.includes('*');
      for (const n of resourceNames) if (n !== '*') this.names.add(n);
    }
    const added = [...this.names].filter((n) => !before.has(n));
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
    for (const n of subscribe) {
      this.everNamed = true;
      if (n === '*') this.wildcard = this.wildcardAllowed;
      else {
        this.names.add(n);
        added.push(n);
      }
    }
    for (const n of unsubscribe) {
      if (n === '*') this.wildcard = false;
      else this.names.delete(n);
    }
    return { added, wildcardAdded: this.wildcard && !wasWildcard };
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
