/**
 * A rollout under way as the pipeline holds it: its id, the revision it started from, its compiled
 * plan and its state; and the facts derived from them that the pipeline needs.
 */
import type { ServedRollout, StageOf } from '../snapshot/reconcile.ts';
import type { Revision } from '../snapshot/revision.ts';
import { compilePlan, type RolloutPlan } from './plan.ts';
import type { ServedStages } from '../snapshot/snapshot-cache.ts';
import { isActive, servesNew, type RolloutState, type StageRules } from './state.ts';

export interface ActiveRollout {
  readonly id: number;
  readonly from: Revision;
  readonly plan: RolloutPlan;
  readonly state: RolloutState;
}

export function rulesOf(plan: RolloutPlan): StageRules {
  return {
    count: plan.stages.length,
    soakMs: (i) => plan.stages[i]?.gates.soakMs ?? 0,
    manual: (i) => plan.stages[i]?.gates.manual ?? false,
    onNack: plan.onNack,
  };
}

/** The reconciler's input: which proxies get the new revision, per the plan and the state. */
export function servedRollout(a: ActiveRollout | undefined): ServedRollout | undefined {
  if (!a || !isActive(a.state)) return undefined;
  const { plan, state } = a;
  const served = { policy: plan.doc, servesNew: plan.names.map((_, i) => servesNew(state, i)) };
  return { from: a.from, served, stageOf: stageFunction(plan, served.servesNew) };
}

/** Which stage a proxy is in and whether it gets the new version, from the plan and who is served it. */
function stageFunction(plan: RolloutPlan, newByStage: readonly boolean[]): StageOf {
  return (node, group) => {
    const i = plan.stageOf(node, group);
    return { stage: plan.names[i] ?? 'rest', servesNew: newByStage[i] ?? false };
  };
}

/** The same function in another thread, from what a published config carries (StagedVersion.served). */
export function stageOfServed(served: ServedStages): StageOf {
  return stageFunction(compilePlan(served.policy), served.servesNew);
}

/** Whether a transition changes who is served which version. */
export function servingChanged(a: RolloutState, b: RolloutState): boolean {
  return a.stage !== b.stage || a.status !== b.status || !!a.halt?.rolledBack !== !!b.halt?.rolledBack;
}

/** Whether any group would serve other bytes (model-only changes, like the policy itself, do not). */
export function changesServed(from: Revision, to: Revision): boolean {
  for (const [name, g] of to.groups) {
    const old = from.groups.get(name);
    if (!old || old.secretNames.join() !== g.secretNames.join()) return true;
    for (const [kind, t] of Object.entries(g.snapshot.types))
      if (old.snapshot.types[kind as keyof typeof g.snapshot.types].version !== t.version) return true;
  }
  return false;
}
