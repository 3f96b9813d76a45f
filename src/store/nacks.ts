import type { Sqlite } from './sqlite.ts';

export interface NackEvent {
  at: string;
  nodeId: string;
  nodeCluster: string;
  nodeGroup: string;
  transport: string;
  typeUrl: string;
  version: string;
  nonce: string;
  errorCode: number;
  message: string;
}

interface NackRow {
  at: string;
  node_id: string;
  node_cluster: string;
  node_group: string;
  transport: string;
  type_url: string;
  version: string;
  nonce: string;
  error_code: number;
  message: string;
}

/**
 * NACKs as reported by the node registry (already deduplicated, capped and rate-limited there),
 * kept so an operator can read Envoy's reason after the proxy moved on.
 */
export class NackLog {
  constructor(private readonly db: Sqlite) {}

  record(e: NackEvent): void {
    this.db
      .prepare(
        `INSERT INTO nack_events
         (at, node_id, node_cluster, node_group, transport, type_url, version, nonce, error_code, message)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        e.at,
        e.nodeId,
        e.nodeCluster,
        e.nodeGroup,
        e.transport,
        e.typeUrl,
        e.version,
        e.nonce,
        e.errorCode,
        e.message,
      );
  }

  /** Newest first; of one node when `nodeId` is given. */
  list(nodeId?: string, limit = 100): NackEvent[] {
    const rows = (
      nodeId
        ? this.db.prepare('SELECT * FROM nack_events WHERE node_id = ? ORDER BY id DESC LIMIT ?').all(nodeId, limit)
        : this.db.prepare('SELECT * FROM nack_events ORDER BY id DESC LIMIT ?').all(limit)
    ) as NackRow[];
    return rows.map((r) => ({
      at: r.at,
      nodeId: r.node_id,
      nodeCluster: r.node_cluster,
      nodeGroup: r.node_group,
      transport: r.transport,
      typeUrl: r.type_url,
      version: r.version,
      nonce: r.nonce,
      errorCode: r.error_code,
      message: r.message,
    }));
  }
}
