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

  /** Replaces the subscription with a SotW request's names; returns whether anything was added. */
  setSotw(resourceNames: readonly string[]): boolean {
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
    if (this.wildcard && !wasWildcard) return true;
    for (const n of this.names) if (!before.has(n)) return true;
    return false;
  }

  isEmpty(): boolean {
    return !this.wildcard && this.names.size === 0;
  }
}
