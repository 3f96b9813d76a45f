import { TablePruner, type RetentionSettings } from './retention.ts';
import type { Sqlite, Statement } from './sqlite.ts';

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
 * NACKs as reported by the node registry (already deduplicated, capped and rate-limited per stream
 * there, messages capped), kept so an operator can read Envoy's reason after the proxy moved on.
 * Node ids are the client's to choose, so the log is bounded per node, per version and overall, and
 * expires. Past a version's bound a new NACK still goes in, in place of the oldest row with the
 * same message (else the version's oldest): NACKs under made-up node ids cannot keep a real
 * proxy's reason out, and every distinct message of the version stays while its rows are newest.
 */
export class NackLog {
  private readonly insert: Statement;
  private readonly seen: Statement;
  private readonly ofVersion: Statement;
  private readonly trimNode: Statement;
  private readonly sameMessage: Statement;
  private readonly oldestOfVersion: Statement;
  private readonly remove: Statement;
  private readonly pruner: TablePruner;

  constructor(
    private readonly db: Sqlite,
    private readonly retention: RetentionSettings['nacks'],
  ) {
    this.insert = db.prepare(
      `INSERT INTO nack_events
       (at, node_id, node_cluster, node_group, transport, type_url, version, nonce, error_code, message)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.seen = db.prepare('SELECT 1 FROM nack_events WHERE node_id = ? AND type_url = ? AND version = ? LIMIT 1');
    this.ofVersion = db.prepare('SELECT count(*) AS n FROM nack_events WHERE type_url = ? AND version = ?');
    this.trimNode = db.prepare(
      `DELETE FROM nack_events WHERE node_id = ? AND id NOT IN
       (SELECT id FROM nack_events WHERE node_id = ? ORDER BY id DESC LIMIT ?)`,
    );
    this.sameMessage = db.prepare(
      'SELECT id FROM nack_events WHERE type_url = ? AND version = ? AND message = ? ORDER BY id LIMIT 1',
    );
    this.oldestOfVersion = db.prepare(
      'SELECT id FROM nack_events WHERE type_url = ? AND version = ? ORDER BY id LIMIT 1',
    );
    this.remove = db.prepare('DELETE FROM nack_events WHERE id = ?');
    this.pruner = new TablePruner(db, 'nack_events', 'at', retention);
  }

  /**
   * Whether it was stored: once per node, type and version. Past the version's bound it takes the
   * place of the oldest row with the same message, else of the version's oldest row.
   */
  record(e: NackEvent): boolean {
    if (this.seen.get(e.nodeId, e.typeUrl, e.version)) return false;
    if ((this.ofVersion.get(e.typeUrl, e.version) as { n: number }).n >= this.retention.perVersion) {
      const evict = (this.sameMessage.get(e.typeUrl, e.version, e.message) ??
        this.oldestOfVersion.get(e.typeUrl, e.version)) as { id: number } | undefined;
      if (evict) this.remove.run(evict.id);
    }
    this.insert.run(
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
    this.trimNode.run(e.nodeId, e.nodeId, this.retention.perNode);
    this.pruner.added();
    return true;
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
