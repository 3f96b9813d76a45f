/**
 * NACK containment across a node group. Records, per (group, type), the last type snapshot some
 * node ACKed and the versions some node NACKed. With `serveLastAckedToNewNodes`, a node that
 * connects while its group's newest version of a type stands NACKed is first served the last
 * version the group ACKed, instead of a version already known to be rejected; the next published
 * version is served normally.
 */
import type { TypeSnapshot } from '../snapshot/group-snapshot.ts';
import type { ResourceKind } from '../xds/resource-types.ts';

interface Entry {
  lastAcked?: TypeSnapshot;
  nacked: Set<string>;
}

export class GroupAckTracker {
  private readonly entries = new Map<string, Entry>();

  constructor(readonly serveLastAckedToNewNodes: boolean) {}

  private entry(group: string, kind: ResourceKind): Entry {
    const key = `${group}\u0000${kind}`;
    let e = this.entries.get(key);
    if (!e) this.entries.set(key, (e = { nacked: new Set() }));
    return e;
  }

  acked(group: string, t: TypeSnapshot): void {
    const e = this.entry(group, t.kind);
    e.lastAcked = t;
    e.nacked.delete(t.version);
  }

  nacked(group: string, kind: ResourceKind, version: string): void {
    const e = this.entry(group, kind);
    e.nacked.add(version);
    if (e.nacked.size > 64) e.nacked.delete(e.nacked.values().next().value as string);
  }

  isNacked(group: string, kind: ResourceKind, version: string): boolean {
    return this.entries.get(`${group}\u0000${kind}`)?.nacked.has(version) ?? false;
  }

  firstServe(group: string, kind: ResourceKind, current: TypeSnapshot): TypeSnapshot {
    if (!this.serveLastAckedToNewNodes) return current;
    const e = this.entries.get(`${group}\u0000${kind}`);
    if (!e?.nacked.has(current.version) || !e.lastAcked || e.lastAcked.version === current.version) return current;
    return e.lastAcked;
  }
}
