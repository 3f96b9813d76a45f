/**
 * What the admin API needs from the rest of the server: reads of the stores and the operator
 * decisions (rollback, pin, unpin). A small interface, so `admin/` depends on no pipeline class
 * and can be tested against a fake.
 */
import type { Diagnostic } from '../shared/diagnostics.ts';
import type { DecisionResult, SharedDecisionStatus } from '../decision-log/decision.ts';
import type { RolloutView } from '../rollout/view.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import type { AuditEntry } from '../store/audit.ts';
import type { StoredWindow } from '../store/override-windows.ts';
import type { NackEvent } from '../store/nacks.ts';
import type { Pin } from '../store/pins.ts';
import type { Rejection } from '../store/rejections.ts';
import type { GroupChanges, VersionRecord } from '../store/revisions.ts';
import type { ResourceKind } from '../xds/resource-types.ts';
import type { ServedPatchInfo } from '../served/served-state.ts';

export type { ServedPatchInfo } from '../served/served-state.ts';

export interface RegistrationInfo {
  service: string;
  address: string;
  state: 'healthy' | 'unhealthy' | 'draining';
  identity: string;
  lastSeen: string;
  weight?: number;
  zone?: string;
}

export interface ServedSecretInfo {
  name: string;
  fingerprint: string;
  notAfter?: string;
  subject?: string;
}

/** What applying the directory did: a new version, none (the served tree), or a refusal and why. */
export interface ApplyResult {
  readonly status: 'applied' | 'unchanged' | 'rejected' | 'unreadable';
  readonly versionId?: number;
  readonly diagnostics: readonly Diagnostic[];
}

export interface AdminControl {
  versions(limit: number): VersionRecord[];
  /** Per group, what changed between two versions; undefined if either has no stored resources. */
  diff(fromId: number, toId: number): Record<string, GroupChanges> | undefined;
  pins(): Pin[];
  audit(limit?: number): AuditEntry[];
  /** The expiring overrides of the newest applied tree, soonest deadline first. */
  overrides(): StoredWindow[];
  /** The newest refusal on record, current or not. */
  latestRejection(): Rejection | undefined;
  /** The newest refusal while the directory still holds the refused tree (or secret files). */
  currentRejection(): Rejection | undefined;
  nacks(nodeId?: string, limit?: number): NackEvent[];
  /** Served secrets as fingerprints and expiry (never the material). */
  secrets(): ServedSecretInfo[];
  /** The EnvoyPatch documents of the served version, with their groups and targets. */
  patches?(): ServedPatchInfo[];
  /** One resource (JSON) as a stored version serves it to a group; undefined when not in it. */
  resourceAt?(versionId: number, group: string, kind: ResourceKind, name: string): object | undefined;
  /** The group as its newest applied version serves it, with no pin or rollout stage (for `explain`). */
  newestGroup?(group: string): GroupSnapshot | undefined;
  /** Endpoints registered at run time: service, address, state, last heartbeat, identity. */
  registrations?(): RegistrationInfo[];
  /**
   * Decisions; each is audited, and fails with a FleetError (FXDS_UNKNOWN_VERSION, ...) when it
   * cannot be made. With several replicas it is made through the shared store, and fails with
   * FXDS_SHARED_UNAVAILABLE while that is unreachable.
   */
  rollback(versionId: number, actor: string): Promise<DecisionResult>;
  /**
   * Reads and applies the config directory now, without the watcher's debounce (a change known to
   * be complete); audited with the actor.
   */
  apply(actor: string): Promise<ApplyResult>;
  pin(group: string, versionId: number, actor: string): Promise<DecisionResult>;
  unpin(group: string, actor: string): Promise<DecisionResult>;
  /** The shared decision store as this replica sees it; undefined when decisions are not shared. */
  sharedDecisions(): SharedDecisionStatus | undefined;
  /** The rollout under way (and the last one that ended, for context). */
  rollout(): { rollout: RolloutView | null; last?: RolloutView };
  rolloutCommand(command: 'promote' | 'halt' | 'resume' | 'abort', actor: string): Promise<RolloutView | null>;
}
