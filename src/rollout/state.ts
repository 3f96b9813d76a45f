/**
 * The state machine of one rollout, pure: a state and an event in, the next state out. The
 * controller feeds it gate evaluations, NACKs and operator commands; the reconciler reads from it
 * which stages are served the new version.
 *
 *   progressing --(stage gates hold: ACKs, then soak; a manual stage waits for promote)--> next stage
 *   progressing --(promote: the operator skips what the stage still waits for)--> next stage
 *   progressing --(the last explicit stage passes)--> complete ("rest" gets the version)
 *   progressing --(NACK from a proxy on the new version | halt)--> halted
 *   halted --(resume)--> progressing          halted | progressing --(abort)--> aborted
 */
export type RolloutStatus = 'progressing' | 'halted' | 'complete' | 'aborted';

export interface HaltInfo {
  reason: 'nack' | 'manual';
  at: string;
  /** For a NACK: who refused what, in Envoy's words. */
  nodeId?: string;
  typeUrl?: string;
  message?: string;
  /** The halted stage went back to the previous version (policy onNack: rollback). */
  rolledBack: boolean;
}

export interface RolloutState {
  /** Config versions the rollout goes from and to. */
  readonly from: number;
  readonly to: number;
  readonly status: RolloutStatus;
  /** The stage being gated: stages before it, and it (unless rolled back), have the new version. */
  readonly stage: number;
  readonly stageSince: string;
  /** When the ACK gate of the current stage started to hold (the soak runs from here). */
  readonly ackedSince?: string;
  readonly halt?: HaltInfo;
  readonly startedAt: string;
  readonly endedAt?: string;
}

export type RolloutEvent =
  | { type: 'gates'; acked: boolean }
  | { type: 'nack'; nodeStage: number; nodeId: string; typeUrl: string; message: string }
  | { type: 'promote' }
  | { type: 'halt' }
  | { type: 'resume' }
  | { type: 'abort' };

export interface StageRules {
  /** Number of explicit stages (the implicit "rest" is index `count`). */
  count: number;
  soakMs(stage: number): number;
  manual(stage: number): boolean;
  onNack: 'halt' | 'rollback';
}

export class RolloutCommandError extends Error {}

export function startRollout(from: number, to: number, now: Date): RolloutState {
  const at = now.toISOString();
  return { from, to, status: 'progressing', stage: 0, stageSince: at, startedAt: at };
}

/** Whether a proxy of stage `nodeStage` is served the new version. */
export function servesNew(s: RolloutState, nodeStage: number): boolean {
  if (s.status === 'complete') return true;
  if (s.status === 'aborted') return false;
  if (nodeStage < s.stage) return true;
  return nodeStage === s.stage && !s.halt?.rolledBack;
}

export function isActive(s: RolloutState | undefined): s is RolloutState {
  return !!s && (s.status === 'progressing' || s.status === 'halted');
}

function advance(s: RolloutState, rules: StageRules, at: string): RolloutState {
  // Passing the last explicit stage hands the version to "rest": everyone has it, the rollout is done.
  const next = s.stage + 1;
  if (next >= rules.count) return { ...s, status: 'complete', stage: rules.count, endedAt: at, ackedSince: undefined };
  return { ...s, stage: next, stageSince: at, ackedSince: undefined };
}

export function step(s: RolloutState, e: RolloutEvent, rules: StageRules, now: Date): RolloutState {
  const at = now.toISOString();
  switch (e.type) {
    case 'gates': {
      if (s.status !== 'progressing') return s;
      if (!e.acked) return s.ackedSince ? { ...s, ackedSince: undefined } : s;
      const since = s.ackedSince ?? at;
      const soaked = now.getTime() - Date.parse(since) >= rules.soakMs(s.stage);
      if (soaked && !rules.manual(s.stage)) return advance(s, rules, at);
      return since === s.ackedSince ? s : { ...s, ackedSince: since };
    }
    case 'nack': {
      if (s.status !== 'progressing' || !servesNew(s, e.nodeStage)) return s;
      const halt: HaltInfo = {
        reason: 'nack',
        at,
        nodeId: e.nodeId,
        typeUrl: e.typeUrl,
        message: e.message,
        rolledBack: rules.onNack === 'rollback',
      };
      return { ...s, status: 'halted', halt, ackedSince: undefined };
    }
    case 'promote': {
      if (s.status !== 'progressing') throw new RolloutCommandError(`a ${s.status} rollout cannot be promoted`);
      return advance(s, rules, at);
    }
    case 'halt': {
      if (s.status !== 'progressing') throw new RolloutCommandError(`a ${s.status} rollout cannot be halted`);
      return { ...s, status: 'halted', halt: { reason: 'manual', at, rolledBack: false }, ackedSince: undefined };
    }
    case 'resume': {
      if (s.status !== 'halted') throw new RolloutCommandError(`a ${s.status} rollout cannot be resumed`);
      const { halt: _halt, ...rest } = s;
      return { ...rest, status: 'progressing', stageSince: s.halt?.rolledBack ? at : s.stageSince };
    }
    case 'abort': {
      if (s.status !== 'progressing' && s.status !== 'halted')
        throw new RolloutCommandError(`a ${s.status} rollout cannot be aborted`);
      return { ...s, status: 'aborted', endedAt: at };
    }
  }
}
