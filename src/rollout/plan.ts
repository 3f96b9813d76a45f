/**
 * A rollout policy compiled for serving: which stage a proxy belongs to. A proxy belongs to the
 * first stage whose selector holds for it; proxies no stage selects form the implicit last stage
 * "rest". Stages are numbered 0..n-1 and "rest" is n.
 */
import { createHash } from 'node:crypto';
import type { NodeIdentity } from '../model/node-groups.ts';
import type { RolloutDoc } from '../model/schema.ts';
import { parseDurationMs } from '../shared/duration.ts';
import { compileGlob } from '../shared/glob.ts';
import { localitySelects } from '../features/locality/schema.ts';

export interface StageGates {
  /** Share (0..100) of the stage's connected proxies that must ACK every changed type. */
  ackedPercent: number;
  /** Connected proxies needed before the stage can pass. */
  minProxies: number;
  soakMs: number;
  manual: boolean;
}

export interface Stage {
  name: string;
  gates: StageGates;
  /** Whether the stage selects a proxy of `group`. */
  selects(node: NodeIdentity, group: string): boolean;
}

export interface RolloutPlan {
  /** The policy it was compiled from (a serving thread compiles it again). */
  readonly doc: RolloutDoc;
  readonly stages: readonly Stage[];
  readonly onNack: 'halt' | 'rollback';
  /** Whether proxies the transport did not authenticate count in gates and halt on NACK. */
  readonly acceptsUnauthenticated: boolean;
  /** Index of the proxy's stage; `stages.length` for "rest". */
  stageOf(node: NodeIdentity, group: string): number;
  /** Stage names with "rest" last. */
  readonly names: readonly string[];
}

/**
 * Where a node id falls in [0, 100): the first 32 bits of sha256(id). Stable across restarts and
 * replicas, and nested: the proxies of a 5% stage are among those of a 20% one.
 */
export function hashPercent(nodeId: string): number {
  return (createHash('sha256').update(nodeId).digest().readUInt32BE(0) / 2 ** 32) * 100;
}

export function compilePlan(doc: RolloutDoc): RolloutPlan {
  const stages: Stage[] = doc.stages.map((s) => {
    const groups = s.select?.groups ? new Set(s.select.groups) : undefined;
    const id = s.select?.idPattern ? compileGlob(s.select.idPattern) : undefined;
    const percent = s.select?.percent;
    const locality = s.select?.locality;
    return {
      name: s.name,
      gates: {
        ackedPercent: s.gates?.ackedPercent ?? 100,
        minProxies: s.gates?.minProxies ?? 1,
        soakMs: s.gates?.soak ? (parseDurationMs(s.gates.soak) ?? 0) : 0,
        manual: s.gates?.approval === 'manual',
      },
      selects: (node, group) =>
        (!groups || groups.has(group)) &&
        (!id || id.test(node.id)) &&
        (!locality || localitySelects(locality, node.locality)) &&
        (percent === undefined || hashPercent(node.id) < percent),
    };
  });
  return {
    doc,
    stages,
    onNack: doc.onNack ?? 'halt',
    acceptsUnauthenticated: doc.acceptUnauthenticatedNodes ?? false,
    names: [...stages.map((s) => s.name), 'rest'],
    stageOf(node, group) {
      const i = stages.findIndex((s) => s.selects(node, group));
      return i < 0 ? stages.length : i;
    },
  };
}
