/**
 * Operator decisions made at run time (rollback, pin, unpin, rollout transitions) in the form every
 * replica can apply: versions are named by model hash, because version ids are numbered by each
 * replica's own database while model hashes are the same wherever the same tree was applied.
 *
 * A decision read back from the shared store is outside input: `parseDecision` checks its shape.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

const Hash = Type.String({ pattern: '^[0-9a-f]{16,128}$' });
const Group = Type.String({ minLength: 1, maxLength: 253 });

const RolloutEventSchema = Type.Union([
  Type.Object({ type: Type.Literal('promote') }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('halt') }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('resume') }, { additionalProperties: false }),
  Type.Object({ type: Type.Literal('abort') }, { additionalProperties: false }),
  Type.Object(
    {
      type: Type.Literal('nack'),
      nodeStage: Type.Integer({ minimum: 0 }),
      nodeId: Type.String({ maxLength: 512 }),
      typeUrl: Type.String({ maxLength: 512 }),
      message: Type.String({ maxLength: 8192 }),
    },
    { additionalProperties: false },
  ),
]);

export const DecisionSchema = Type.Union([
  Type.Object(
    {
      kind: Type.Literal('rollback'),
      /** The version to serve. */
      to: Hash,
      /** The version the fleet was on when the rollback was decided: not served again from the directory. */
      replaces: Type.Optional(Hash),
    },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal('pin'), group: Group, to: Hash }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('unpin'), group: Group }, { additionalProperties: false }),
  Type.Object(
    {
      kind: Type.Literal('rollout'),
      /** The rollout's target version: a transition of another rollout does not apply. */
      to: Hash,
      /** The state the transition was decided from: a replica already past it skips it. */
      stage: Type.Integer({ minimum: 0 }),
      status: Type.Union([Type.Literal('progressing'), Type.Literal('halted')]),
      event: RolloutEventSchema,
    },
    { additionalProperties: false },
  ),
]);

export type Decision = Static<typeof DecisionSchema>;

/** A decision as the shared log holds it. */
export interface LoggedDecision {
  seq: number;
  at: string;
  /** The replica the operator (or its rollout gates) decided on. */
  replica: string;
  actor: string;
  decision: Decision;
}

/** What applying a decision did on this replica. */
export type DecisionResult =
  | { status: 'applied'; versionId?: number }
  /** Already in effect, or superseded by what this replica applied since (a newer push, another rollout). */
  | { status: 'skipped'; reason: string }
  /** It names a version this replica never applied: it cannot serve it. */
  | { status: 'missing'; reason: string }
  /** Recorded in the shared log, not yet read back here (the store failed in between). */
  | { status: 'pending'; reason: string };

export function parseDecision(value: unknown): Decision | undefined {
  return Value.Check(DecisionSchema, value) ? value : undefined;
}

/** The shared store as one replica sees it. */
export interface SharedLogStatus {
  connected: boolean;
  /** Newest sequence number seen in the store. */
  newestSeq: number;
  lastError?: string;
  /** Since when connected (or not). */
  since: string;
}

/** A shared decision this replica could not apply (kept for the status API). */
export interface UnappliedDecision {
  seq: number;
  kind: string;
  status: 'skipped' | 'missing' | 'pending' | 'invalid';
  reason: string;
}

export interface SharedDecisionStatus extends SharedLogStatus {
  /** The last decision applied here: behind `newestSeq` while catching up. */
  appliedSeq: number;
  /**
   * Decisions in the store not applied here; null while this replica cannot know: the store is
   * unreachable, or has not been read to its end since it was reached (a replica started while the
   * store was down knows nothing of what was decided meanwhile).
   */
  behind: number | null;
  /** The newest decisions this replica skipped or could not apply (at most 20). */
  unapplied: UnappliedDecision[];
}
