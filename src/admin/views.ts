/**
 * What the admin API shows, assembled from the server's parts: the fleet's rows, a node as the
 * status page lists it, the status document, what is served beside versions.
 */
import type { Logger } from 'pino';
import type { AdminControl } from './control.ts';
import { servedVersionOf } from './explain.ts';
import { peerNodes, type PeerNodes, type ReplicaNode, type ReplicaSettings } from './peers.ts';
import { nodeRow, whereNodeIs, type NodeRow } from './fleet-view.ts';
import type { Metrics } from '../status/metrics.ts';
import type { TokenAuth } from '../security/tokens.ts';
import { groupSnapshotFor, type SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { NodeRegistry } from '../status/node-registry.ts';
import { listenerView } from '../status/listener-view.ts';
import { RESOURCE_KINDS, TypeUrls } from '../xds/resource-types.ts';
import { statusNode } from '../status/node-registry.ts';

export interface AdminDeps {
  control: AdminControl;
  cache: SnapshotCache;
  registry: NodeRegistry;
  log: Logger;
  metrics?: Metrics;
  /** When any token is configured, every call but health checks needs one; mutations need role admin. */
  tokens?: TokenAuth;
  /** Number of REST polls being held, when REST is enabled. */
  restHeld?: () => number;
  /** This replica's name and its peers (one fleet view across replicas). */
  replica?: ReplicaSettings;
  /** Node groups whose rendered files could not be written (files transport). */
  fileFailures?: () => { group: string; error: string; versionId: number; at: string }[];
  /** While the config tree cannot be read completely (app/read-retry.ts). */
  unreadableTree?: () => { since: string; reason: string; failedReads: number; nextReadAt: string } | undefined;
  /** /readyz answers 503 while this replica cannot know whether it missed shared decisions. */
  notReadyWhileUnknown?: boolean;
  /** grpc.serveLastAckedOnNack: what explains a node served its group's last accepted version. */
  serveLastAckedOnNack?: boolean;
  /** The certificates fleetxds's own TLS listeners serve now. */
  listenerCertificates?: () => { listener: string; subject: string; fingerprint: string; notAfter: Date }[];
}

/**
 * The one node list every view starts from: this replica's proxies (streams and pollers, each
 * labelled with the replica's name), and, unless `local` (a peer asking), its peers'.
 */
export async function fleetNodes(
  deps: AdminDeps,
  opts: { local?: boolean } = {},
): Promise<{ mine: ReplicaNode[]; peers: PeerNodes[] }> {
  const replica = deps.replica?.name;
  const mine = [...deps.registry.connected(), ...deps.registry.polling()].map((s) => (replica ? { ...s, replica } : s));
  return { mine, peers: opts.local ? [] : await peerNodes(deps.replica) };
}

/** Every proxy of the fleet (this replica's and its peers'), each with its state. */
export async function fleetRows(deps: AdminDeps): Promise<NodeRow[]> {
  const cur = deps.cache.current;
  const { mine, peers } = await fleetNodes(deps);
  const pins = new Map(deps.control.pins().map((p) => [p.group, p]));
  return [...mine, ...peers.flatMap((p) => p.nodes)].map((s) => {
    const placed = cur && groupSnapshotFor(cur, statusNode(s), s.group);
    return nodeRow({
      status: s,
      served: placed?.snapshot,
      ...(cur && { versionId: servedVersionOf(cur, pins.get(s.group), s.group, placed?.base) }),
    });
  });
}

/** A node as the status page lists it (its newest NACK first). */
export function nodeView(s: ReplicaNode): object {
  const nacks = Object.entries(s.types)
    .filter(([, t]) => t.lastNack)
    .map(([typeUrl, t]) => ({ typeUrl, ...t.lastNack! }));
  nacks.sort((a, b) => (a.at < b.at ? 1 : -1));
  return {
    ...whereNodeIs(s),
    peer: s.peer,
    userAgent: s.userAgent,
    ...(s.clientCertificate ? { clientCertificate: s.clientCertificate } : {}),
    connectedAt: s.connectedAt,
    lastSeenAt: s.lastSeenAt,
    types: s.types,
    lastNack: nacks[0],
  };
}

/** The status document of this replica's proxies (`streams`: fleetNodes' `mine`). */
export function fleetStatus(
  deps: AdminDeps,
  streams: readonly ReplicaNode[],
): { nodes: object[] } & Record<string, unknown> {
  const cur = deps.cache.current;
  const rollout: object[] = [];
  if (cur) {
    // What each node is served (during a staged rollout, its stage's version): resolved once per node.
    const served = new Map(streams.map((s) => [s, groupSnapshotFor(cur, statusNode(s), s.group).snapshot]));
    for (const [group, g] of cur.groups) {
      for (const kind of RESOURCE_KINDS) {
        const typeUrl = TypeUrls[kind];
        const t = g.types[kind];
        const nodes = streams.filter((s) => s.group === group && s.types[typeUrl]);
        if (!nodes.length) continue;
        const want = (s: (typeof nodes)[number]) => served.get(s)?.types[kind].version ?? t.version;
        const acked = nodes.filter((s) => s.types[typeUrl]?.ackedVersion === want(s)).length;
        const nacked = nodes.filter((s) => s.types[typeUrl]?.lastNack?.version === want(s)).length;
        const staged = cur.staged?.groups.get(group)?.types[kind].version;
        rollout.push({
          group,
          typeUrl,
          version: t.version,
          ...(staged && staged !== t.version ? { stagedVersion: staged } : {}),
          nodes: nodes.length,
          acked,
          nacked,
          behind: nodes.length - acked,
        });
      }
    }
  }
  const nodes = streams.map((s) => nodeView(s));
  const history = deps.control.versions(20);
  return {
    version: cur
      ? (history.find((h) => h.id === cur.versionId) ?? { id: cur.versionId, appliedAt: cur.appliedAt })
      : null,
    rollout,
    staged: deps.control.rollout(),
    nodes,
    rejection: deps.control.currentRejection() ?? null,
    fileFailures: deps.fileFailures?.() ?? [],
    unreadableTree: deps.unreadableTree?.() ?? null,
    ...servedView(deps),
    sharedDecisions: deps.control.sharedDecisions() ?? null,
    history,
  };
}

/** What the fleet is served beside versions: listeners, runtime registrations, patches, fleetxds's certificates. */
export function servedView(deps: AdminDeps) {
  const cur = deps.cache.current;
  return {
    listenerCertificates: (deps.listenerCertificates?.() ?? []).map((c) => ({
      ...c,
      notAfter: c.notAfter.toISOString(),
    })),
    // What each group's proxies listen on, as the served listener resources say.
    listeners: cur
      ? [...cur.groups].flatMap(([group, g]) =>
          [...g.types.listener.resources.values()].map((r) => ({ group, ...listenerView(r.json) })),
        )
      : [],
    patches: deps.control.patches?.() ?? [],
    registrations: deps.control.registrations?.() ?? [],
  };
}

export function redactedSecret(
  name: string,
  version: string,
  served: { name: string; fingerprint: string; notAfter?: string; subject?: string }[] = [],
): object {
  const m = served.find((x) => x.name === name);
  return {
    name,
    version,
    fingerprint: m?.fingerprint,
    notAfter: m?.notAfter,
    subject: m?.subject,
    material: '(redacted)',
  };
}

export function clampLimit(v: string | undefined, max = 1000): number {
  const n = Number(v ?? 50);
  return Number.isInteger(n) && n > 0 ? Math.min(n, max) : 50;
}
