import type { NodeGroupResolver } from '../model/node-groups.ts';
import type { Derivable } from './derived.ts';
import type { GroupSnapshot } from './group-snapshot.ts';

/** A complete, applied configuration: what every transport serves until the next one. */
export interface PublishedConfig extends Derivable {
  /** Row id in config_versions. */
  readonly versionId: number;
  readonly modelHash: string;
  readonly treeHash: string;
  readonly appliedAt: string;
  /** Reported to clients as DiscoveryResponse.control_plane.identifier (version id and git commit). */
  readonly controlPlane?: string;
  readonly groups: ReadonlyMap<string, GroupSnapshot>;
  readonly resolver: NodeGroupResolver;
}

export type PublishListener = (next: PublishedConfig, prev: PublishedConfig | undefined) => void;

/**
 * Holds the one published configuration. Transports read `current` and subscribe to changes;
 * they never see a half-applied config because a new one replaces the old in a single assignment.
 * Only the pipeline's reconcile step publishes.
 */
export class SnapshotCache {
  private cur: PublishedConfig | undefined;
  private readonly listeners = new Set<PublishListener>();

  get current(): PublishedConfig | undefined {
    return this.cur;
  }

  publish(next: PublishedConfig): void {
    const prev = this.cur;
    this.cur = next;
    for (const l of this.listeners) l(next, prev);
  }

  onPublish(fn: PublishListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
