/**
 * Where a rollout stands, from what the node registry knows: per stage, how many connected proxies
 * it holds, how many are on the version their stage should have (every type they subscribe to
 * ACKed at that version), and whether the current stage's ACK gate holds. Pure: the registry's
 * view and the published config in, figures out.
 */
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import type { PublishedConfig } from '../snapshot/snapshot-cache.ts';
import { RESOURCE_TYPES } from '../xds/resource-types.ts';
import type { RolloutPlan } from './plan.ts';
import { servesNew, type RolloutState } from './state.ts';
import type { NodeLocality } from '../model/node-groups.ts';
import { localizedFor } from '../snapshot/locality.ts';
import { statusNode } from '../status/node-registry.ts';

/** A connected proxy as the registry reports it. */
export interface NodeView {
  nodeId: string;
  group: string;
  /** Where the node runs: stages may select by it, and it is served its locality's variant. */
  locality?: NodeLocality;
  /** Whether the transport authenticated the node (see StreamStatus.authenticated). */
  authenticated: boolean;
  types: Readonly<Record<string, { ackedVersion?: string } | undefined>>;
}

export interface StageProgress {
  name: string;
  /** Whether the stage's proxies are served the new version now. */
  onNewVersion: boolean;
  /** Connected proxies of the stage. */
  nodes: number;
  /** Of those, proxies that ACKed the version they are served, for every type they subscribe to. */
  upToDate: number;
  /** Connected proxies of the stage not counted: the transport did not authenticate them. */
  unauthenticated: number;
}

export interface RolloutProgress {
  stages: StageProgress[];
  /** Whether the current stage's ACK gate holds (enough proxies, enough of them up to date). */
  gateHolds: boolean;
}

function upToDate(n: NodeView, target: GroupSnapshot | undefined): boolean {
  if (!target) return false;
  for (const t of RESOURCE_TYPES) {
    const st = n.types[t.typeUrl];
    if (st && st.ackedVersion !== target.types[t.kind].version) return false;
  }
  return true;
}

/** The registry's entries by proxy (node id within its group). */
function byNode(nodes: Iterable<NodeView>): NodeView[][] {
  const out = new Map<string, NodeView[]>();
  for (const n of nodes) {
    const key = `${n.group}\u0000${n.nodeId}`;
    const list = out.get(key);
    if (list) list.push(n);
    else out.set(key, [n]);
  }
  return [...out.values()];
}

export function rolloutProgress(
  plan: RolloutPlan,
  state: RolloutState,
  cfg: PublishedConfig | undefined,
  nodes: Iterable<NodeView>,
): RolloutProgress {
  const stages: StageProgress[] = plan.names.map((name, i) => ({
    name,
    onNewVersion: servesNew(state, i),
    nodes: 0,
    upToDate: 0,
    unauthenticated: 0,
  }));
  // A proxy may hold several streams (per-type xDS; over SotW ADS the overrides runtime layer has
  // its own): it counts once, up to date when every stream is, authenticated when every stream is.
  for (const streams of byNode(nodes)) {
    const n = streams[0]!;
    const i = plan.stageOf(statusNode({ nodeId: n.nodeId, nodeCluster: '', locality: n.locality }), n.group);
    const s = stages[i]!;
    if (!streams.every((x) => x.authenticated) && !plan.acceptsUnauthenticated) {
      s.unauthenticated++;
      continue;
    }
    s.nodes++;
    const staged = cfg?.staged?.groups.get(n.group);
    const target = s.onNewVersion && staged ? staged : cfg?.groups.get(n.group);
    const served = target && localizedFor(target, n.locality);
    if (streams.every((x) => upToDate(x, served))) s.upToDate++;
  }
  const current = stages[state.stage];
  const gates = plan.stages[state.stage]?.gates;
  const gateHolds =
    !!current &&
    !!gates &&
    current.nodes >= gates.minProxies &&
    current.upToDate * 100 >= gates.ackedPercent * current.nodes;
  return { stages, gateHolds };
}
