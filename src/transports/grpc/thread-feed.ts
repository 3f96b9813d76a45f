/**
 * A published config carried to serving threads (serving.ts), encoded once for all of
 * them. Each message says what changed since the last one: the type snapshots that are new (by
 * kind and version, their resources by content key, in name order), the resources no thread has
 * yet, and which types and resources are gone. New resources' bytes are copied once into a
 * SharedArrayBuffer that every thread reads in place: a thread's resources are views of it, so N
 * threads hold the bytes once, and a one-route change carries one route configuration.
 *
 * What a thread holds is a function of the current config alone (the types it serves and their
 * resources), so a thread started late is brought up by a message made from nothing for the same
 * config (`new FeedWriter().next(cfg)`), and the shared writer's next message applies to it too.
 */
import { NodeGroupResolver } from '../../model/node-groups.ts';
import type { NodeGroupDoc } from '../../model/schema.ts';
import { stageOfServed } from '../../rollout/active.ts';
import type { Derivable } from '../../snapshot/derived.ts';
import { jsonText, type EncodedResource } from '../../snapshot/encoder.ts';
import { storedTypeSnapshot, type GroupSnapshot, type TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import type { PublishedConfig, ServedStages, StagedVersion } from '../../snapshot/snapshot-cache.ts';
import type { ProtoIssue } from '../../xds/proto-json.ts';
import { RESOURCE_KINDS, ResourceTypes, type ResourceKind } from '../../xds/resource-types.ts';

/** A type snapshot a thread does not hold yet: its resources' content keys in name order. */
export interface FeedType {
  readonly kind: ResourceKind;
  readonly version: string;
  readonly keys: readonly string[];
}

/** A node group: the id (`kind:version`) of its type snapshot of each kind, in RESOURCE_KINDS order. */
export interface FeedGroup {
  readonly group: string;
  readonly types: readonly string[];
  /** Its variants per calling locality (src/snapshot/locality.ts): the key and the id of the endpoint type. */
  readonly localities?: readonly (readonly [key: string, endpoint: string])[];
}

/**
 * Resources new to the threads, as parallel columns (one structured clone of a few arrays, not of
 * thousands of objects). `framed` is the DiscoveryResponse field; its Any is its last `anyLength`
 * bytes. Resources whose type carries config sources also carry their JSON text (a per-type
 * client is served a view re-encoded from it), and so do runtime layers (whether one is served
 * with a TTL depends on what it holds); the others never need it on a gRPC stream.
 */
export interface FeedResources {
  readonly bytes: SharedArrayBuffer;
  readonly keys: readonly string[];
  readonly kinds: readonly ResourceKind[];
  readonly names: readonly string[];
  readonly at: readonly number[];
  readonly framedLength: readonly number[];
  readonly anyLength: readonly number[];
  /** Length of the JSON text that follows the framed bytes; 0: none carried. */
  readonly jsonLength: readonly number[];
  readonly namedOnly: readonly boolean[];
}

/** The fields that name a published config's version; they cross to the threads as they are. */
type ConfigHead = Pick<
  PublishedConfig,
  'versionId' | 'modelHash' | 'treeHash' | 'appliedAt' | 'controlPlane' | 'pinnedControlPlanes'
>;

function headOf(c: ConfigHead): ConfigHead {
  return {
    versionId: c.versionId,
    modelHash: c.modelHash,
    treeHash: c.treeHash,
    appliedAt: c.appliedAt,
    ...(c.controlPlane !== undefined ? { controlPlane: c.controlPlane } : {}),
    ...(c.pinnedControlPlanes !== undefined ? { pinnedControlPlanes: c.pinnedControlPlanes } : {}),
  };
}

export interface FeedMessage extends ConfigHead {
  /** Set when node placement changed (a new resolver). */
  readonly nodeGroups?: readonly NodeGroupDoc[];
  readonly groups: readonly FeedGroup[];
  readonly staged?: {
    readonly versionId: number;
    readonly fromVersionId: number;
    readonly controlPlane: string;
    readonly groups: readonly FeedGroup[];
    readonly served: ServedStages;
  };
  readonly types: readonly FeedType[];
  readonly resources?: FeedResources;
  readonly dropTypes: readonly string[];
  readonly dropKeys: readonly string[];
}

const typeId = (t: { kind: string; version: string }) => `${t.kind}:${t.version}`;

/** Main thread: turns each published config into the message that brings the threads up to it. */
export class FeedWriter {
  /** Type snapshots the threads hold, with their resources' keys. */
  private readonly types = new Map<string, readonly string[]>();
  /** How many held types name each resource key. */
  private readonly refs = new Map<string, number>();
  private resolver?: NodeGroupResolver;

  next(cfg: PublishedConfig): FeedMessage {
    const live = new Map<string, TypeSnapshot>();
    const held = (t: TypeSnapshot) => {
      const id = typeId(t);
      if (!live.has(id)) live.set(id, t);
      return id;
    };
    const feedGroups = (groups: ReadonlyMap<string, GroupSnapshot>): FeedGroup[] =>
      [...groups.values()].map((g) => ({
        group: g.group,
        types: RESOURCE_KINDS.map((k) => held(g.types[k])),
        ...(g.localities && {
          localities: [...g.localities].map(([key, v]) => [key, held(v.types.endpoint)] as const),
        }),
      }));
    const groups = feedGroups(cfg.groups);
    const staged = cfg.staged && stagedFeed(cfg.staged, feedGroups(cfg.staged.groups));

    const types: FeedType[] = [];
    const fresh = new Map<string, EncodedResource>();
    for (const [id, t] of live) {
      if (this.types.has(id)) continue;
      const keys: string[] = [];
      for (const r of t.resources.values()) {
        keys.push(r.key);
        if (!this.refs.has(r.key)) fresh.set(r.key, r);
      }
      types.push({ kind: t.kind, version: t.version, keys });
    }
    // References are added before they are dropped: a resource moving between types stays.
    for (const t of types) {
      this.types.set(typeId(t), t.keys);
      for (const k of t.keys) this.refs.set(k, (this.refs.get(k) ?? 0) + 1);
    }
    const dropTypes: string[] = [];
    const dropKeys: string[] = [];
    for (const [id, keys] of this.types) {
      if (live.has(id)) continue;
      this.types.delete(id);
      dropTypes.push(id);
      for (const k of keys) {
        const n = this.refs.get(k)! - 1;
        if (n > 0) this.refs.set(k, n);
        else {
          this.refs.delete(k);
          dropKeys.push(k);
        }
      }
    }
    const resolverChanged = cfg.resolver !== this.resolver;
    this.resolver = cfg.resolver;
    return {
      ...headOf(cfg),
      ...(resolverChanged ? { nodeGroups: cfg.resolver.nodeGroups } : {}),
      groups,
      ...(staged ? { staged } : {}),
      types,
      ...(fresh.size ? { resources: packResources([...fresh.values()]) } : {}),
      dropTypes,
      dropKeys,
    };
  }
}

function stagedFeed(s: StagedVersion, groups: FeedGroup[]): FeedMessage['staged'] {
  return {
    versionId: s.versionId,
    fromVersionId: s.fromVersionId,
    controlPlane: s.controlPlane,
    groups,
    served: s.served,
  };
}

/** Whether a thread needs a resource's JSON: to re-encode a view of it, or to tell whether it has a TTL (ttl.ts). */
const needsJson = (r: EncodedResource) => ResourceTypes[r.kind].carriesConfigSources || r.kind === 'runtime';

function packResources(list: readonly EncodedResource[]): FeedResources {
  const texts = list.map((r) => (needsJson(r) ? Buffer.from(jsonText(r)) : undefined));
  let size = 0;
  for (let i = 0; i < list.length; i++) size += list[i]!.framed.length + (texts[i]?.length ?? 0);
  const bytes = new SharedArrayBuffer(size);
  const into = Buffer.from(bytes);
  const at: number[] = [];
  let pos = 0;
  list.forEach((r, i) => {
    at.push(pos);
    pos += r.framed.copy(into, pos);
    if (texts[i]) pos += texts[i].copy(into, pos);
  });
  return {
    bytes,
    keys: list.map((r) => r.key),
    kinds: list.map((r) => r.kind),
    names: list.map((r) => r.name),
    at,
    framedLength: list.map((r) => r.framed.length),
    anyLength: list.map((r) => r.any.length),
    jsonLength: texts.map((t) => t?.length ?? 0),
    namedOnly: list.map((r) => r.namedOnly),
  };
}

const NO_ISSUES: readonly ProtoIssue[] = [];

/** A resource as a serving thread holds it: views of the shared bytes. */
class FedResource implements EncodedResource {
  readonly version: string;
  readonly issues = NO_ISSUES;
  derived?: Derivable['derived'];
  private parsed?: Record<string, unknown>;

  constructor(
    readonly kind: ResourceKind,
    readonly name: string,
    readonly key: string,
    readonly framed: Buffer,
    readonly any: Buffer,
    readonly namedOnly: boolean,
    private readonly text: Buffer | undefined,
  ) {
    this.version = key.slice(0, 16);
  }

  get json(): Record<string, unknown> {
    if (!this.text) throw new Error(`the JSON of ${this.kind} ${this.name} is not carried to serving threads`);
    return (this.parsed ??= JSON.parse(this.text.toString()) as Record<string, unknown>);
  }
}

function sameVariants(
  a: ReadonlyMap<string, GroupSnapshot> | undefined,
  b: ReadonlyMap<string, GroupSnapshot> | undefined,
): boolean {
  if (!a || !b) return a === b;
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

/** Serving thread: applies each message in order and gives the config to publish. */
export class FeedReader {
  private readonly resources = new Map<string, EncodedResource>();
  private readonly types = new Map<string, TypeSnapshot>();
  private resolver?: NodeGroupResolver;
  private groups = new Map<string, GroupSnapshot>();
  private stagedGroups = new Map<string, GroupSnapshot>();

  /** How many resources and type snapshots the thread holds (for tests and status). */
  get held(): { resources: number; types: number } {
    return { resources: this.resources.size, types: this.types.size };
  }

  /** The type snapshot of that kind and version, while the thread holds it. */
  typeOf(kind: ResourceKind, version: string): TypeSnapshot | undefined {
    return this.types.get(typeId({ kind, version }));
  }

  read(m: FeedMessage): PublishedConfig {
    if (m.resources) this.addResources(m.resources);
    for (const t of m.types) {
      const list = t.keys.map((k) => {
        const r = this.resources.get(k);
        if (!r) throw new Error(`feed out of order: resource ${k} of ${t.kind} ${t.version} was never sent`);
        return r;
      });
      this.types.set(typeId(t), storedTypeSnapshot(t.kind, t.version, list));
    }
    if (m.nodeGroups) this.resolver = new NodeGroupResolver(m.nodeGroups);
    if (!this.resolver) throw new Error('feed out of order: the first message carries no node groups');
    this.groups = this.groupsOf(m.groups, this.groups);
    const staged = m.staged && {
      ...m.staged,
      groups: (this.stagedGroups = this.groupsOf(m.staged.groups, this.stagedGroups)),
      stageOf: stageOfServed(m.staged.served),
    };
    for (const id of m.dropTypes) this.types.delete(id);
    for (const k of m.dropKeys) this.resources.delete(k);
    return {
      ...headOf(m),
      groups: this.groups,
      resolver: this.resolver,
      ...(staged ? { staged } : {}),
    };
  }

  private addResources(f: FeedResources): void {
    const all = Buffer.from(f.bytes);
    for (let i = 0; i < f.keys.length; i++) {
      const at = f.at[i]!;
      const end = at + f.framedLength[i]!;
      const framed = all.subarray(at, end);
      const json = f.jsonLength[i]! > 0 ? all.subarray(end, end + f.jsonLength[i]!) : undefined;
      const any = framed.subarray(framed.length - f.anyLength[i]!);
      this.resources.set(
        f.keys[i]!,
        new FedResource(f.kinds[i]!, f.names[i]!, f.keys[i]!, framed, any, f.namedOnly[i]!, json),
      );
    }
  }

  /** The groups of a message; a group whose types are all the same objects keeps its snapshot object. */
  private groupsOf(list: readonly FeedGroup[], before: ReadonlyMap<string, GroupSnapshot>): Map<string, GroupSnapshot> {
    const out = new Map<string, GroupSnapshot>();
    for (const g of list) {
      const types = {} as Record<ResourceKind, TypeSnapshot>;
      RESOURCE_KINDS.forEach((k, i) => {
        const t = this.types.get(g.types[i]!);
        if (!t) throw new Error(`feed out of order: type ${g.types[i]} of group ${g.group} was never sent`);
        types[k] = t;
      });
      const prev = before.get(g.group);
      const localities = g.localities && this.localitiesOf(g, types, prev);
      const same =
        prev && RESOURCE_KINDS.every((k) => prev.types[k] === types[k]) && sameVariants(prev.localities, localities);
      out.set(g.group, same ? prev : { group: g.group, types, ...(localities && { localities }) });
    }
    return out;
  }

  /** A group's views per calling locality: its types with another endpoint type (an unchanged one keeps its object). */
  private localitiesOf(
    g: FeedGroup,
    types: Record<ResourceKind, TypeSnapshot>,
    prev: GroupSnapshot | undefined,
  ): Map<string, GroupSnapshot> {
    const out = new Map<string, GroupSnapshot>();
    for (const [key, id] of g.localities!) {
      const endpoint = this.types.get(id);
      if (!endpoint) throw new Error(`feed out of order: type ${id} of group ${g.group} was never sent`);
      const before = prev?.localities?.get(key);
      const variant = { ...types, endpoint };
      out.set(
        key,
        before && RESOURCE_KINDS.every((k) => before.types[k] === variant[k])
          ? before
          : { group: g.group, types: variant },
      );
    }
    return out;
  }
}
