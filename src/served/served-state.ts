/**
 * What is served, as explicit inputs, and the one path that publishes it: every job of the write
 * path (applying a tree, an operator's decision, a rollout's transition, a certificate rotation,
 * registered endpoints, a restart) changes some inputs through `update`, which reconciles them
 * (src/snapshot/reconcile.ts) and publishes the result. Nothing else publishes.
 */
import type { Membership } from '../membership/membership.ts';
import type { ServiceDoc } from '../model/schema.ts';
import type { SecretMaterial } from '../model/types.ts';
import { findByName } from '../shared/sorted-lists.ts';
import type { EncodedResource, ResourceEncoder } from '../snapshot/encoder.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import { newestGroup, reconcile, type ServedInputs } from '../snapshot/reconcile.ts';
import type { Revision } from '../snapshot/revision.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { buildLoadAssignment } from '../translate/endpoints.ts';
import { assignmentVariants } from '../snapshot/locality.ts';

/** An EnvoyPatch document of the served version, as the status shows it. */
export interface ServedPatchInfo {
  name: string;
  groups: readonly string[] | 'all';
  /** `kind/name-or-glob`. */
  target: string;
  form: 'merge' | 'jsonPatch' | 'filters';
  description?: string;
}

/** A change to what is served: reconcile's inputs, and the TLS material the served secrets were built from. */
export interface ServedChange extends Partial<ServedInputs> {
  material?: ReadonlyMap<string, SecretMaterial>;
}

export interface ServedSecret {
  name: string;
  fingerprint: string;
  notAfter?: string;
  subject?: string;
}

export class ServedState {
  /** The inputs of what is served; undefined until a version exists. */
  private inputs?: ServedInputs;
  /** TLS material of the served model's secrets (in memory only, never stored): status and rotation read it. */
  private material: ReadonlyMap<string, SecretMaterial> = new Map();

  constructor(
    private readonly cache: SnapshotCache,
    private readonly encoder: ResourceEncoder,
    /** Where endpoints register at run time, if anywhere. */
    private readonly membership?: Membership,
  ) {}

  /** The newest applied revision (what a rollout moves to, what pins and rollbacks are relative to). */
  get revision(): Revision | undefined {
    return this.inputs?.revision;
  }

  get pins(): ReadonlyMap<string, Revision> {
    return this.inputs?.pins ?? new Map();
  }

  /** The one publish path: replaces some inputs, reconciles, publishes. */
  update(change: ServedChange): void {
    const base = this.inputs;
    const revision = change.revision ?? base?.revision;
    if (!revision) return;
    if (change.material) this.material = change.material;
    this.inputs = {
      revision,
      pins: change.pins ?? base?.pins ?? new Map(),
      secrets: change.secrets ?? base?.secrets ?? new Map(),
      rollout: 'rollout' in change ? change.rollout : base?.rollout,
      ...this.membersOf(change, revision),
    };
    this.cache.publish(reconcile(this.inputs, this.cache.current));
  }

  /** The group's snapshot in the newest applied version, as if nothing held it back (no pin, no stage). */
  newestGroup(group: string): GroupSnapshot | undefined {
    return this.inputs && newestGroup(this.inputs, group, this.cache.current);
  }

  /** The material a served secret was built from. */
  materialOf(name: string): SecretMaterial | undefined {
    return this.material.get(name);
  }

  get secretFiles(): string[] {
    return [...this.material.values()].flatMap((m) => m.files);
  }

  get servedSecrets(): ServedSecret[] {
    return [...this.material.values()].map(({ name, fingerprint, notAfter, subject }) => ({
      name,
      fingerprint,
      notAfter,
      subject,
    }));
  }

  /** A service of the newest applied version. */
  servedService(name: string): ServiceDoc | undefined {
    return findByName(this.inputs?.revision.model.services ?? [], name);
  }

  /** The EnvoyPatch documents of the newest applied version, with the groups each applies to. */
  get servedPatches(): ServedPatchInfo[] {
    const model = this.inputs?.revision.model;
    if (!model) return [];
    return (model.envoyPatches ?? []).map((p) => ({
      name: p.name,
      groups: p.groups ?? 'all',
      target: `${p.target.kind}/${p.target.name}`,
      form: p.merge ? 'merge' : p.jsonPatch ? 'jsonPatch' : 'filters',
      ...(p.description !== undefined && { description: p.description }),
    }));
  }

  /**
   * Endpoints registered at run time: `changed` names the services whose members changed; their
   * assignments are encoded again and served (EDS only: nothing else changes, no version is made).
   */
  membersChanged(changed: ReadonlySet<string>): void {
    const served = this.inputs?.revision;
    if (!served || !this.membership) return;
    const members = new Map(this.inputs?.members);
    const memberFailover = new Map(this.inputs?.memberFailover);
    for (const name of changed) {
      const s = findByName(served.model.services, name);
      memberFailover.delete(name);
      if (s?.registration) this.addMember(s, members, memberFailover);
      else members.delete(name);
    }
    this.update({ members, memberFailover });
  }

  /** The members' inputs of `revision`: as `change` gives them, kept for the same revision, or read now. */
  private membersOf(change: ServedChange, revision: Revision): Pick<ServedInputs, 'members' | 'memberFailover'> {
    const base = this.inputs;
    if (change.members) return { members: change.members, memberFailover: change.memberFailover };
    if (revision === base?.revision) return { members: base.members, memberFailover: base.memberFailover };
    return this.membersFor(revision);
  }

  /** A registered service's assignment, and (failing over by locality) its assignment per calling locality. */
  private addMember(
    s: ServiceDoc,
    members: Map<string, EncodedResource>,
    memberFailover: Map<string, ReadonlyMap<string, EncodedResource>>,
  ): void {
    const base = this.encoder.encode('endpoint', s.name, buildLoadAssignment(s, this.membership!.members(s.name)));
    members.set(s.name, base);
    if (s.locality?.failover) memberFailover.set(s.name, assignmentVariants(base, this.encoder));
  }

  /**
   * The assignments of a revision's services that have endpoints registered now (their static
   * endpoints and today's members). A service nobody registered into is served its own translated
   * assignment, and a restart with no registrations does not read the whole stored model for it.
   */
  private membersFor(revision: Revision): Pick<ServedInputs, 'members' | 'memberFailover'> {
    const members = new Map<string, EncodedResource>();
    const memberFailover = new Map<string, ReadonlyMap<string, EncodedResource>>();
    if (!this.membership) return { members };
    const registered = new Set(this.membership.list().map((r) => r.service));
    for (const name of registered) {
      const s = findByName(revision.model.services, name);
      if (s?.registration) this.addMember(s, members, memberFailover);
    }
    return { members, memberFailover };
  }
}
