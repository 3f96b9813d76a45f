import type { NodeGroupResolver, NodeIdentity } from '../model/node-groups.ts';
import type { RolloutDoc } from '../model/schema.ts';
import type { Derivable } from './derived.ts';
import type { GroupSnapshot } from './group-snapshot.ts';
import { localizedFor } from './locality.ts';

/** A complete, applied configuration: what every transport serves until the next one. */
export interface PublishedConfig extends Derivable {
  /** Row id in config_versions. */
  readonly versionId: number;
  readonly modelHash: string;
  readonly treeHash: string;
  readonly appliedAt: string;
  /** Reported to clients as DiscoveryResponse.control_plane.identifier (version id and git commit). */
  readonly controlPlane?: string;
  /** The identifier of the version a pinned group is held at, by group. */
  readonly pinnedControlPlanes?: Readonly<Record<string, string>>;
  /**
   * What each node group is served. During a staged rollout: what proxies not yet in a promoted
   * stage get (the previous version; also what rendered files carry).
   */
  readonly groups: ReadonlyMap<string, GroupSnapshot>;
  readonly resolver: NodeGroupResolver;
  /** Set while a rollout is under way: the new version, for the proxies of promoted stages. */
  readonly staged?: StagedVersion;
}

export interface StagedVersion {
  /** Config version id of the new version (the rollout's target). */
  readonly versionId: number;
  /** Config version id the proxies of later stages stay on. */
  readonly fromVersionId: number;
  /** control_plane.identifier for proxies served the new version. */
  readonly controlPlane: string;
  readonly groups: ReadonlyMap<string, GroupSnapshot>;
  /** The proxy's stage name and whether it gets the new version. */
  stageOf(node: NodeIdentity, group: string): { stage: string; servesNew: boolean };
  /** What stageOf is computed from. */
  readonly served: ServedStages;
}

/** A rollout's stages as plain data: its policy, and per stage ("rest" last) whether it is served the new version. */
export interface ServedStages {
  readonly policy: RolloutDoc;
  readonly servesNew: readonly boolean[];
}

/**
 * The snapshot a proxy of `group` is served: its stage's version during a rollout, as served to its
 * locality; `base` is the group's snapshot in that version, whatever the locality.
 */
export function groupSnapshotFor(
  cfg: PublishedConfig,
  node: NodeIdentity,
  group: string,
): { snapshot?: GroupSnapshot; stage?: string; controlPlane?: string; base?: GroupSnapshot } {
  const placed = versionFor(cfg, node, group);
  const base = placed.snapshot;
  return base?.localities ? { ...placed, snapshot: localizedFor(base, node.locality), base } : { ...placed, base };
}

/** The group's snapshot in the version the node is served (its stage's during a rollout). */
function versionFor(
  cfg: PublishedConfig,
  node: NodeIdentity,
  group: string,
): { snapshot?: GroupSnapshot; stage?: string; controlPlane?: string } {
  if (cfg.staged) {
    const staged = cfg.staged.groups.get(group);
    if (staged) {
      const { stage, servesNew } = cfg.staged.stageOf(node, group);
      if (servesNew) return { snapshot: staged, stage, controlPlane: cfg.staged.controlPlane };
      return { snapshot: cfg.groups.get(group), stage, controlPlane: cfg.controlPlane };
    }
  }
  return { snapshot: cfg.groups.get(group), controlPlane: cfg.pinnedControlPlanes?.[group] ?? cfg.controlPlane };
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
