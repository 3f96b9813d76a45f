/** What the status page, the admin API and the CLI show of a rollout. */
import type { PublishedConfig } from '../snapshot/snapshot-cache.ts';
import type { RolloutDoc } from '../model/schema.ts';
import type { RolloutPlan, StageGates } from './plan.ts';
import { rolloutProgress, type NodeView } from './progress.ts';
import type { HaltInfo, RolloutState } from './state.ts';

export interface RolloutStageView {
  name: string;
  onNewVersion: boolean;
  nodes: number;
  upToDate: number;
  /** For the current stage: what it waits for. */
  waitingFor?: 'proxies' | 'acks' | 'soak' | 'approval';
  soakRemainingMs?: number;
  /** A line for people: "canary: 3 of 3 ACKed, soaking 2m of 5m". */
  summary: string;
  /** Which proxies the stage takes, as the policy says (absent for "rest": every proxy left). */
  select?: RolloutDoc['stages'][number]['select'];
  /** What lets the stage pass (absent for "rest"). */
  gates?: StageGates;
}

export interface RolloutView {
  id: number;
  from: number;
  to: number;
  status: RolloutState['status'];
  stage: string;
  startedAt: string;
  stageSince: string;
  onNack: 'halt' | 'rollback';
  /** Which proxies gates and NACK halts count. */
  counts: 'authenticated nodes' | 'all nodes';
  halt?: HaltInfo;
  stages: RolloutStageView[];
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 120 ? `${Math.round(s / 60)}m` : `${s}s`;
}

export function rolloutView(
  r: { id: number; plan: RolloutPlan; state: RolloutState },
  cfg: PublishedConfig | undefined,
  nodes: Iterable<NodeView>,
  now = Date.now(),
): RolloutView {
  const { plan, state } = r;
  const progress = rolloutProgress(plan, state, cfg, nodes);
  const stages = progress.stages.map((p, i): RolloutStageView => {
    const version = p.onNewVersion ? state.to : state.from;
    let summary = `${p.name}: ${p.nodes} node${p.nodes === 1 ? '' : 's'} on version ${version}, ${p.upToDate} ACKed`;
    if (p.unauthenticated) summary += ` (${p.unauthenticated} unauthenticated, not counted)`;
    const gates = plan.stages[i]?.gates;
    const select = plan.doc.stages[i]?.select;
    const view: RolloutStageView = { ...p, summary, ...(select && { select }), ...(gates && { gates }) };
    if (i === state.stage && state.status === 'progressing' && gates) {
      if (p.nodes < gates.minProxies) view.waitingFor = 'proxies';
      else if (!progress.gateHolds) view.waitingFor = 'acks';
      else {
        const soaked = state.ackedSince ? now - Date.parse(state.ackedSince) : 0;
        if (soaked < gates.soakMs) {
          view.waitingFor = 'soak';
          view.soakRemainingMs = gates.soakMs - soaked;
          summary += `, soaking ${duration(soaked)} of ${duration(gates.soakMs)}`;
        } else if (gates.manual) view.waitingFor = 'approval';
      }
      if (view.waitingFor === 'proxies') summary += `, waiting for ${gates.minProxies} connected`;
      if (view.waitingFor === 'approval') summary += ', waiting for approval (fleetxds rollout promote)';
      view.summary = summary;
    }
    return view;
  });
  return {
    id: r.id,
    from: state.from,
    to: state.to,
    status: state.status,
    stage: plan.names[state.stage] ?? 'rest',
    startedAt: state.startedAt,
    stageSince: state.stageSince,
    onNack: plan.onNack,
    counts: plan.acceptsUnauthenticated ? 'all nodes' : 'authenticated nodes',
    ...(state.halt ? { halt: state.halt } : {}),
    stages,
  };
}
