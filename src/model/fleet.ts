/**
 * What validation knows of the connected fleet, per node group: which gRPC and Envoy releases run
 * there and where its nodes say they run. Counted summaries of the live nodes, made when a tree is checked and
 * never kept: each entry is one release or one locality among the connected nodes, so their number
 * is bounded by the nodes the server admits, whatever text those send.
 */
import { connectedClients, type ConnectedClients } from './grpc-compat.ts';
import { envoyReleaseOf, type EnvoyReleases } from './runtime-flags.ts';
import type { NodeLocality } from './node-groups.ts';

/** Connected nodes of one group in one locality (`locality` undefined: they declare none). */
export interface LocalityCount {
  readonly locality?: NodeLocality;
  readonly nodes: number;
}

export interface ConnectedFleet {
  readonly grpc: ConnectedClients;
  readonly envoy: EnvoyReleases;
  /** By group: its connected nodes by locality, those declaring none under the key "". */
  readonly localities: ReadonlyMap<string, ReadonlyMap<string, LocalityCount>>;
}

/** A node's stream (or REST poller) as the fleet summary reads it. */
export interface FleetNode {
  /** A node with several streams (per-type xDS, the overrides layer's own stream) counts once. */
  readonly nodeId?: string;
  readonly group: string;
  readonly userAgent: string;
  readonly locality?: NodeLocality;
}

function oncePerNode(streams: readonly FleetNode[]): FleetNode[] {
  const seen = new Set<string>();
  return streams.filter((n) => {
    if (n.nodeId === undefined) return true;
    const key = `${n.group}\u0000${n.nodeId}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function localityKey(l: NodeLocality | undefined): string {
  return l ? JSON.stringify([l.region, l.zone, l.subZone]) : '';
}

export function connectedFleet(streams: readonly FleetNode[]): ConnectedFleet {
  const nodes = oncePerNode(streams);
  const localities = new Map<string, Map<string, LocalityCount>>();
  for (const n of nodes) {
    let g = localities.get(n.group);
    if (!g) localities.set(n.group, (g = new Map<string, LocalityCount>()));
    const key = localityKey(n.locality);
    g.set(key, { locality: n.locality, nodes: (g.get(key)?.nodes ?? 0) + 1 });
  }
  return { grpc: connectedClients(nodes), envoy: envoyReleases(nodes), localities };
}

function envoyReleases(nodes: readonly FleetNode[]): EnvoyReleases {
  const out = new Map<string, Map<string, number>>();
  for (const n of nodes) {
    const release = envoyReleaseOf(n.userAgent);
    if (!release) continue;
    let g = out.get(n.group);
    if (!g) out.set(n.group, (g = new Map<string, number>()));
    g.set(release, (g.get(release) ?? 0) + 1);
  }
  return new Map([...out].map(([group, r]) => [group, [...r].map(([release, nodes]) => ({ release, nodes }))]));
}
