import type { AdminControl } from '../admin/control.ts';
import type { Membership } from '../membership/membership.ts';
import type { Stores } from '../store/database.ts';
import type { DecisionDesk } from './decision-desk.ts';
import type { ConfigPipeline } from './pipeline.ts';
import type { RolloutDriver } from './rollout-driver.ts';

/** The admin API's view of the server: reads of the stores and the served config, decisions through the desk. */
export function adminControl(parts: {
  stores: Stores;
  pipeline: ConfigPipeline;
  membership: Membership;
  desk: DecisionDesk;
  rollouts: RolloutDriver;
  configDir: string;
}): AdminControl {
  const { stores, pipeline, membership, desk, rollouts, configDir } = parts;
  return {
    versions: (limit) => stores.revisions.list(limit),
    diff: (a, b) => stores.revisions.diff(a, b),
    pins: () => stores.pins.list(),
    audit: (limit) => stores.audit.list(limit),
    overrides: () => stores.overrideWindows.list(),
    latestRejection: () => stores.rejections.latest(),
    currentRejection: () => (pipeline.refusalIsCurrent ? stores.rejections.latest() : undefined),
    nacks: (nodeId, limit) => stores.nacks.list(nodeId, limit),
    secrets: () => pipeline.served.servedSecrets,
    patches: () => pipeline.served.servedPatches,
    newestGroup: (group) => pipeline.served.newestGroup(group),
    resourceAt: (versionId, group, kind, name) => pipeline.resourceAt(versionId, group, kind, name),
    registrations: () =>
      membership.list().map((r) => ({
        service: r.service,
        address: r.address,
        state: r.state,
        identity: r.identity,
        lastSeen: new Date(r.lastSeen).toISOString(),
        ...(r.weight !== undefined && { weight: r.weight }),
        ...(r.zone !== undefined && { zone: r.zone }),
      })),
    rollback: (versionId, actor) => desk.make({ kind: 'rollback', versionId }, actor),
    apply: async (actor) => {
      const out = await pipeline.applyDirectory(configDir);
      stores.audit.append(actor, 'apply', {
        status: out.status,
        ...('versionId' in out && { versionId: out.versionId }),
      });
      return out;
    },
    pin: (group, versionId, actor) => desk.make({ kind: 'pin', group, versionId }, actor),
    unpin: (group, actor) => desk.make({ kind: 'unpin', group }, actor),
    sharedDecisions: () => desk.status(),
    rollout: () => rollouts.status(),
    rolloutCommand: async (command, actor) => {
      await desk.make({ kind: 'rollout', command }, actor);
      // A promote of the last stage completes the rollout: what it became, not "no rollout".
      return rollouts.current() ?? rollouts.status().last ?? null;
    },
  };
}
