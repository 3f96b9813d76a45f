/**
 * What is served is a function of three inputs and nothing else:
 *  - the applied revision (model, encoded resources per group);
 *  - pins: node groups held at an earlier revision;
 *  - secret material: the current encoded Secret of every secret name;
 *  - membership: the ClusterLoadAssignment of each service endpoints register into at run time.
 * Every trigger (apply, rollback, pin, unpin, certificate rotation, restart) changes one input
 * and calls `reconcile`; the pipeline publishes its result and has no other way to publish.
 *
 * `previous` is only an optimisation: a type whose version is unchanged keeps the previous
 * TypeSnapshot object, so streams see "nothing changed" in O(1) and the response bodies cached on
 * it stay valid. It never changes what is served.
 */
import { RESOURCE_KINDS, type ResourceKind } from '../xds/resource-types.ts';
import type { EncodedResource } from './encoder.ts';
import { makeTypeSnapshot, type FailoverAssignments, type GroupSnapshot, type TypeSnapshot } from './group-snapshot.ts';
import { localityVariants } from './locality.ts';
import type { NodeIdentity } from '../model/node-groups.ts';
import type { Revision, RevisionGroup } from './revision.ts';
import type { PublishedConfig, ServedStages } from './snapshot-cache.ts';

export type StageOf = (node: NodeIdentity, group: string) => { stage: string; servesNew: boolean };

/** A rollout under way: `revision` goes to the proxies whose stage was promoted, the others keep `from`. */
export interface ServedRollout {
  readonly from: Revision;
  /** What `stageOf` is computed from, as plain data (serving threads rebuild it). */
  readonly served: ServedStages;
  readonly stageOf: StageOf;
}

export interface ServedInputs {
  readonly revision: Revision;
  readonly rollout?: ServedRollout;
  /** group -> the revision it is pinned to. */
  readonly pins: ReadonlyMap<string, Revision>;
  /** Encoded Secret resources by name, from the TLS material read last. */
  readonly secrets: ReadonlyMap<string, EncodedResource>;
  /**
   * By service name: its ClusterLoadAssignment with the endpoints registered now (and its static
   * ones), in place of the revision's for every group that has the service.
   */
  readonly members?: ReadonlyMap<string, EncodedResource>;
  /** By service that fails over by locality: its members' assignment for each calling locality. */
  readonly memberFailover?: FailoverAssignments;
}

export function reconcile(inputs: ServedInputs, previous?: PublishedConfig): PublishedConfig {
  const { revision, rollout } = inputs;
  const groups = new Map<string, GroupSnapshot>();
  const serve = (name: string, g: RevisionGroup) =>
    groups.set(name, servedGroup(name, g, inputs, previous?.groups.get(name)));
  // During a rollout the groups serve the previous version by default (a group the previous
  // version lacks has nothing older to serve) and the new one to promoted stages.
  const stagedGroups = new Map<string, GroupSnapshot>();
  for (const [name, g] of revision.groups) {
    const older = rollout?.from.groups.get(name);
    if (!rollout || !older) {
      serve(name, g);
      continue;
    }
    serve(name, older);
    const prev = previous?.staged?.groups.get(name) ?? previous?.groups.get(name);
    stagedGroups.set(name, servedGroup(name, g, inputs, prev));
  }
  // A pin holds its group at the pinned revision (also a group the newest revision no longer has),
  // whatever stage its proxies are in.
  const pinnedControlPlanes: Record<string, string> = {};
  for (const [name, pinned] of inputs.pins) {
    const g = pinned.groups.get(name);
    if (g) {
      serve(name, g);
      pinnedControlPlanes[name] = controlPlaneOf(pinned);
    }
    stagedGroups.delete(name);
  }
  const staged =
    rollout && stagedGroups.size
      ? {
          versionId: revision.id,
          fromVersionId: rollout.from.id,
          controlPlane: controlPlaneOf(revision),
          groups: stagedGroups,
          stageOf: rollout.stageOf,
          served: rollout.served,
        }
      : undefined;
  return {
    ...(staged ? { staged } : {}),
    versionId: revision.id,
    modelHash: revision.modelHash,
    treeHash: revision.treeHash,
    appliedAt: revision.appliedAt,
    // During a rollout the groups serve the previous version by default: name that one.
    controlPlane: controlPlaneOf(staged ? rollout!.from : revision),
    ...(Object.keys(pinnedControlPlanes).length ? { pinnedControlPlanes } : {}),
    groups,
    resolver: revision.resolver,
  };
}

/**
 * What a group would be served with neither pin nor rollout: its newest revision's resources, with
 * today's secrets and registered members (what `explain` compares the served version with).
 */
export function newestGroup(inputs: ServedInputs, name: string, current?: PublishedConfig): GroupSnapshot | undefined {
  const g = inputs.revision.groups.get(name);
  if (!g) return undefined;
  return servedGroup(name, g, inputs, current?.staged?.groups.get(name) ?? current?.groups.get(name));
}

function servedGroup(
  name: string,
  g: RevisionGroup,
  { secrets, members, memberFailover }: Pick<ServedInputs, 'secrets' | 'members' | 'memberFailover'>,
  prev: GroupSnapshot | undefined,
): GroupSnapshot {
  const types = {} as Record<ResourceKind, TypeSnapshot>;
  for (const kind of RESOURCE_KINDS) {
    const fresh =
      kind === 'secret'
        ? makeTypeSnapshot(
            'secret',
            g.secretNames.flatMap((n) => secrets.get(n) ?? []),
          )
        : kind === 'endpoint'
          ? withMembers(g.snapshot.types.endpoint, members)
          : g.snapshot.types[kind];
    const before = prev?.types[kind];
    types[kind] = before && before.version === fresh.version ? before : fresh;
  }
  const snapshot = { group: name, types };
  const localities = localityVariants(snapshot, servedFailover(g.snapshot.failover, members, memberFailover), prev);
  return localities ? { ...snapshot, localities } : snapshot;
}

const NO_VARIANTS: ReadonlyMap<string, EncodedResource> = new Map();

/** A version's failover assignments, with those of registered members in place of its own. */
function servedFailover(
  own: FailoverAssignments | undefined,
  members: ReadonlyMap<string, EncodedResource> | undefined,
  memberFailover: FailoverAssignments | undefined,
): FailoverAssignments | undefined {
  if (!own || !members?.size) return own;
  const out = new Map(own);
  for (const name of own.keys()) if (members.has(name)) out.set(name, memberFailover?.get(name) ?? NO_VARIANTS);
  return out;
}

/** The group's endpoint type with the registered services' assignments in place of the revision's. */
function withMembers(t: TypeSnapshot, members: ReadonlyMap<string, EncodedResource> | undefined): TypeSnapshot {
  if (!members?.size) return t;
  let replaced = false;
  const list = [...t.resources.values()].map((r) => {
    const m = members.get(r.name);
    if (!m) return r;
    replaced = true;
    return m;
  });
  return replaced ? makeTypeSnapshot('endpoint', list) : t;
}

/** DiscoveryResponse.control_plane.identifier: the served version and its git commit. */
function controlPlaneOf(r: Revision): string {
  return `fleetxds version ${r.id}${r.commit ? ` commit ${r.commit}` : ''}`;
}
