/**
 * "Why does node X hold version Y of type T?": one answer, used by `GET /api/v1/nodes/:id/explain`,
 * `fleetxds explain` and the status page.
 *
 * What a proxy is served is decided in several places: an operator pin or a rollout stage picks
 * the version its group is served (`reconcile`, `groupSnapshotFor`); then the stream may not have
 * delivered it yet, because the node refused it (NACK containment), the group refused it and new
 * nodes get the last accepted one, routes wait for new clusters' endpoints (the warming hold), a
 * stream that stopped reading skips to the newest version once it reads (catch-up), or a REST
 * poller has not polled since. `explainNode` is pure: it turns the facts the admin server gathers
 * into, per type, the version the group's newest revision gives, the version this node is served,
 * what it holds, and each rule that made them differ, with the decision or NACK behind it.
 */
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';
import { groupSnapshotFor, type PublishedConfig } from '../snapshot/snapshot-cache.ts';
import type { NackEvent } from '../store/nacks.ts';
import type { Pin } from '../store/pins.ts';
import type { StreamStatus, TypeStatus } from '../status/node-registry.ts';
import { HELD_KINDS } from '../transports/warming-hold.ts';
import { RESOURCE_KINDS, TypeUrls, type ResourceKind } from '../xds/resource-types.ts';
import { statusNode } from '../status/node-registry.ts';
import { localizedFor } from '../snapshot/locality.ts';

export interface TypeFacts {
  readonly kind: ResourceKind;
  /** The type's version in the group's newest revision (undefined: the newest revision lacks the group). */
  readonly newest?: string;
  /** The type's version this node is served now, after pins and rollout stages. */
  readonly served?: string;
  /** What the node's stream reports (undefined: the node never asked for this type). */
  readonly status?: TypeStatus;
  /** Another node of the group NACKed `served` (from the NACK log). */
  readonly groupNacked: boolean;
  /** The stream that carries this type (per-type transports have one per type); undefined: none. */
  readonly stream?: StreamFacts;
}

export interface StreamFacts {
  readonly transport: string;
  readonly connected: boolean;
  readonly lastSeenAt?: string;
  /** Since when the stream's listeners and routes wait for new clusters' endpoints. */
  readonly warmingSince?: string;
  /** Since when the stream has not taken its last response (it catches up once it does). */
  readonly behindSince?: string;
}

export interface NodeFacts {
  readonly nodeId: string;
  readonly group: string;
  readonly newestVersionId: number;
  readonly servedVersionId: number;
  readonly pin?: Pin;
  readonly rollout?: {
    readonly id: number;
    readonly stage: string;
    readonly servesNew: boolean;
    readonly from: number;
    readonly to: number;
  };
  readonly serveLastAckedOnNack: boolean;
  readonly types: readonly TypeFacts[];
}

export type ExplainRule =
  | { rule: 'pin'; versionId: number; actor: string; at: string }
  | { rule: 'rollout-stage'; rolloutId: number; stage: string; servedVersionId: number; newestVersionId: number }
  | { rule: 'not-subscribed' }
  | { rule: 'nack'; version: string; message: string; at: string }
  | { rule: 'group-nack'; version: string }
  | { rule: 'warming-hold'; since: string }
  | { rule: 'catch-up'; since: string }
  | { rule: 'next-poll'; lastSeenAt?: string }
  | { rule: 'disconnected' }
  | { rule: 'in-flight'; sentAt?: string };

export type TypeState = 'in sync' | 'behind' | 'refused' | 'not subscribed';

export interface TypeExplanation {
  type: ResourceKind;
  typeUrl: string;
  /** What the group's newest revision gives. */
  newest: { versionId: number; version?: string };
  /** What this node is served (its group's pin or rollout stage decides). */
  served: { versionId: number; version?: string };
  sentVersion?: string;
  ackedVersion?: string;
  state: TypeState;
  /** Why `served` differs from `newest`, then why the node does not hold `served`; empty: in sync with the newest. */
  rules: ExplainRule[];
  summary: string;
}

export interface NodeExplanation {
  nodeId: string;
  group: string;
  transports: string[];
  connected: boolean;
  types: TypeExplanation[];
}

/** Why the node's group is served another version than its newest: a pin, else a rollout stage. */
function placementRules(f: NodeFacts): ExplainRule[] {
  if (f.pin) return [{ rule: 'pin', versionId: f.pin.versionId, actor: f.pin.actor, at: f.pin.pinnedAt }];
  if (f.rollout && !f.rollout.servesNew)
    return [
      {
        rule: 'rollout-stage',
        rolloutId: f.rollout.id,
        stage: f.rollout.stage,
        servedVersionId: f.rollout.from,
        newestVersionId: f.rollout.to,
      },
    ];
  return [];
}

/** Why the node does not hold what it is served. */
function deliveryRules(f: NodeFacts, t: TypeFacts): { state: TypeState; rules: ExplainRule[] } {
  const s = t.status;
  const st = t.stream;
  const held = st?.warmingSince && HELD_KINDS.has(t.kind);
  if (!st || !s || (s.sentVersion === undefined && !s.lastNack)) {
    if (st && held) return { state: 'behind', rules: [{ rule: 'warming-hold', since: st.warmingSince }] };
    return { state: 'not subscribed', rules: [{ rule: 'not-subscribed' }] };
  }
  if (s.ackedVersion === t.served) return { state: 'in sync', rules: [] };
  if (s.lastNack && s.lastNack.version === t.served)
    return {
      state: 'refused',
      rules: [{ rule: 'nack', version: s.lastNack.version, message: s.lastNack.message, at: s.lastNack.at }],
    };
  if (!st.connected) return { state: 'behind', rules: [{ rule: 'disconnected' }] };
  if (s.sentVersion === t.served) return { state: 'behind', rules: [{ rule: 'in-flight', sentAt: s.sentAt }] };
  const rules: ExplainRule[] = [];
  if (held) rules.push({ rule: 'warming-hold', since: st.warmingSince });
  if (st.behindSince) rules.push({ rule: 'catch-up', since: st.behindSince });
  if (st.transport === 'rest') rules.push({ rule: 'next-poll', lastSeenAt: st.lastSeenAt });
  if (t.groupNacked && f.serveLastAckedOnNack && t.served !== undefined)
    rules.push({ rule: 'group-nack', version: t.served });
  if (!rules.length) rules.push({ rule: 'in-flight', sentAt: s.sentAt });
  return { state: 'behind', rules };
}

const short = (v: string | undefined): string => (v === undefined ? 'none' : v.slice(0, 12));

function ruleText(r: ExplainRule): string {
  switch (r.rule) {
    case 'pin':
      return `its group is pinned to version ${r.versionId} (by ${r.actor} at ${r.at})`;
    case 'rollout-stage':
      return (
        `rollout #${r.rolloutId}: stage "${r.stage}" is not promoted yet, so it stays on version ` +
        `${r.servedVersionId} (the newest is ${r.newestVersionId})`
      );
    case 'not-subscribed':
      return 'nothing of this type was sent to the node: it has not asked for it';
    case 'nack':
      return `the node refused ${short(r.version)} at ${r.at} and is not sent it again: ${r.message}`;
    case 'group-nack':
      return (
        `${short(r.version)} stands refused by another node of the group, so the group's last accepted version ` +
        'was served first'
      );
    case 'warming-hold':
      return `listeners and routes wait (since ${r.since}) until the endpoints of new clusters were sent`;
    case 'catch-up':
      return `the node has not read its last response (since ${r.since}); it gets the newest version once it does`;
    case 'next-poll':
      return `a REST poller: it gets the version at its next poll (last poll ${r.lastSeenAt ?? 'unknown'})`;
    case 'disconnected':
      return 'the node is disconnected';
    case 'in-flight':
      return `sent${r.sentAt ? ` at ${r.sentAt}` : ''}, not acknowledged yet`;
  }
}

export function explainNode(f: NodeFacts): NodeExplanation {
  const placement = placementRules(f);
  const types = f.types.map((t): TypeExplanation => {
    const { state, rules: delivery } = deliveryRules(f, t);
    // A pin or stage that gives the same bytes as the newest revision changes nothing for this type.
    const rules = [...(t.newest !== t.served ? placement : []), ...delivery];
    const holds = t.status?.ackedVersion;
    const summary =
      state === 'in sync' && !rules.length
        ? `holds ${short(holds)}, the newest version (${f.newestVersionId})`
        : `${state === 'in sync' ? `holds ${short(holds)}` : `holds ${short(holds)}, is served ${short(t.served)}`}: ` +
          rules.map(ruleText).join('; ');
    return {
      type: t.kind,
      typeUrl: TypeUrls[t.kind],
      newest: { versionId: f.newestVersionId, ...(t.newest !== undefined && { version: t.newest }) },
      served: { versionId: f.servedVersionId, ...(t.served !== undefined && { version: t.served }) },
      ...(t.status?.sentVersion !== undefined && { sentVersion: t.status.sentVersion }),
      ...(holds !== undefined && { ackedVersion: holds }),
      state,
      rules,
      summary,
    };
  });
  const streams = f.types.flatMap((t) => (t.stream ? [t.stream] : []));
  return {
    nodeId: f.nodeId,
    group: f.group,
    transports: [...new Set(streams.map((s) => s.transport))],
    connected: streams.some((s) => s.connected),
    types,
  };
}

/** Where the facts come from: the published config, the node's streams, the stores. */
export interface ExplainSources {
  readonly cfg: PublishedConfig;
  /** The node's streams and REST entry, live and recently closed (NodeRegistry.byNodeId). */
  readonly streams: readonly StreamStatus[];
  readonly pins: readonly Pin[];
  /** The group as its newest revision serves it (no pin, no stage). */
  newestGroup(group: string): GroupSnapshot | undefined;
  /** Recent NACKs of the whole fleet (read only when `serveLastAckedOnNack` makes the group's NACKs matter). */
  recentNacks(): readonly NackEvent[];
  readonly serveLastAckedOnNack: boolean;
  /** The id of the rollout under way (asked only when the node's group is staged). */
  rolloutId(): number | undefined;
}

/**
 * For each type, the stream that carries it: a live one that was sent it, else a live aggregated one,
 * else the newest closed one.
 */
function streamFor(streams: readonly StreamStatus[], typeUrl: string): StreamStatus | undefined {
  const live = streams.filter((s) => s.disconnectedAt === undefined);
  return (
    live.find((s) => s.types[typeUrl]) ??
    live.find((s) => s.transport.startsWith('grpc-ads') || s.transport === 'rest') ??
    streams.find((s) => s.types[typeUrl])
  );
}

/**
 * The config version a node of `group` is served, given the snapshot it was placed on: its group's
 * pin, else during a rollout the version of its stage, else the newest.
 */
export function servedVersionOf(
  cfg: PublishedConfig,
  pin: { versionId: number } | undefined,
  group: string,
  placed: GroupSnapshot | undefined,
): number {
  if (pin) return pin.versionId;
  const staged = cfg.staged?.groups.has(group) ? cfg.staged : undefined;
  if (staged && placed !== staged.groups.get(group)) return staged.fromVersionId;
  return cfg.staged?.versionId ?? cfg.versionId;
}

/** The facts about one node, or undefined when no stream of it is known. */
export function gatherFacts(nodeId: string, src: ExplainSources, only?: ResourceKind): NodeFacts | undefined {
  const first = src.streams.find((s) => s.disconnectedAt === undefined) ?? src.streams[0];
  if (!first) return undefined;
  const { cfg } = src;
  const group = first.group;
  const node = statusNode(first);
  const placed = groupSnapshotFor(cfg, node, group);
  const newestOfGroup = src.newestGroup(group);
  const newest = newestOfGroup && localizedFor(newestOfGroup, node.locality);
  const pin = src.pins.find((p) => p.group === group);
  const staged = cfg.staged?.groups.has(group) ? cfg.staged : undefined;
  const servesNew = staged !== undefined && placed.base === staged.groups.get(group);
  const newestVersionId = cfg.staged?.versionId ?? cfg.versionId;
  const servedVersionId = servedVersionOf(cfg, pin, group, placed.base);
  // The group's NACKs explain something only when new nodes are served around them.
  const groupNacks = src.serveLastAckedOnNack ? src.recentNacks() : [];
  const types = (only ? [only] : RESOURCE_KINDS).map((kind): TypeFacts => {
    const typeUrl = TypeUrls[kind];
    const stream = streamFor(src.streams, typeUrl);
    const served = placed.snapshot?.types[kind].version;
    return {
      kind,
      newest: newest?.types[kind].version,
      served,
      status: stream?.types[typeUrl],
      groupNacked: groupNacks.some(
        (n) => n.nodeGroup === group && n.typeUrl === typeUrl && n.version === served && n.nodeId !== nodeId,
      ),
      ...(stream && {
        stream: {
          transport: stream.transport,
          connected: stream.disconnectedAt === undefined,
          ...(stream.lastSeenAt !== undefined && { lastSeenAt: stream.lastSeenAt }),
          ...(stream.warmingSince !== undefined && { warmingSince: stream.warmingSince }),
          ...(stream.behindSince !== undefined && { behindSince: stream.behindSince }),
        },
      }),
    };
  });
  return {
    nodeId,
    group,
    newestVersionId,
    servedVersionId,
    ...(pin && { pin }),
    ...(staged &&
      placed.stage !== undefined && {
        rollout: {
          id: src.rolloutId() ?? 0,
          stage: placed.stage,
          servesNew,
          from: staged.fromVersionId,
          to: staged.versionId,
        },
      }),
    serveLastAckedOnNack: src.serveLastAckedOnNack,
    types,
  };
}
