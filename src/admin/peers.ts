/**
 * One view of the fleet across replicas: each replica's status API adds the proxies its peers
 * serve, read from their admin APIs (`/api/v1/nodes?local=1`, so no request loops). A peer that
 * does not answer within a second is listed as unreachable; what this replica serves is shown
 * regardless.
 */
import type { StreamStatus } from '../status/node-registry.ts';

export interface ReplicaSettings {
  /** This replica's name: on every node it serves, and as the `replica` label of its metrics. */
  name: string;
  /** Admin API base URLs of the other replicas (`http://10.0.0.6:18001`). */
  peers?: string[];
  /** Bearer token the peers' admin APIs accept (read-only is enough). */
  token?: string;
}

export type ReplicaNode = StreamStatus & { replica?: string };

export interface PeerNodes {
  url: string;
  replica?: string;
  nodes: ReplicaNode[];
  error?: string;
}

const PEER_TIMEOUT_MS = 1000;

export async function peerNodes(settings: ReplicaSettings | undefined): Promise<PeerNodes[]> {
  if (!settings?.peers?.length) return [];
  return Promise.all(
    settings.peers.map(async (url): Promise<PeerNodes> => {
      try {
        const res = await fetch(`${url.replace(/\/$/, '')}/api/v1/nodes?local=1&limit=5000`, {
          headers: settings.token ? { authorization: `Bearer ${settings.token}` } : {},
          signal: AbortSignal.timeout(PEER_TIMEOUT_MS),
        });
        if (!res.ok) return { url, nodes: [], error: `HTTP ${res.status}` };
        const body = (await res.json()) as { replica?: string; connected: StreamStatus[]; polling: StreamStatus[] };
        const nodes = [...body.connected, ...body.polling].map((n) => ({ ...n, replica: body.replica }));
        return { url, replica: body.replica, nodes };
      } catch (err) {
        return { url, nodes: [], error: (err as Error).message };
      }
    }),
  );
}
