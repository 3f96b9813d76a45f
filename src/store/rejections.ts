import type { Diagnostic } from '../shared/diagnostics.ts';
import { TablePruner, type LogRetention } from './retention.ts';
import type { Sqlite } from './sqlite.ts';

export interface Rejection {
  id: number;
  treeHash: string;
  source: string;
  rejectedAt: string;
  diagnostics: Diagnostic[];
}

/** Trees (and secret renewals) that were refused, with the diagnostics that say why. */
export class RejectionLog {
  private readonly pruner: TablePruner;

  constructor(
    private readonly db: Sqlite,
    retention: LogRetention,
  ) {
    this.pruner = new TablePruner(db, 'rejected_trees', 'rejected_at', retention);
  }

  record(treeHash: string, source: string, diagnostics: Diagnostic[], at = new Date()): number {
    const info = this.db
      .prepare('INSERT INTO rejected_trees (tree_hash, source, rejected_at, diagnostics_json) VALUES (?, ?, ?, ?)')
      .run(treeHash, source, at.toISOString(), JSON.stringify(diagnostics));
    this.pruner.added();
    return Number(info.lastInsertRowid);
  }

  latest(): Rejection | undefined {
    const r = this.db
      .prepare(
        'SELECT id, tree_hash, source, rejected_at, diagnostics_json FROM rejected_trees ORDER BY id DESC LIMIT 1',
      )
      .get() as
      { id: number; tree_hash: string; source: string; rejected_at: string; diagnostics_json: string } | undefined;
    return (
      r && {
        id: r.id,
        treeHash: r.tree_hash,
        source: r.source,
        rejectedAt: r.rejected_at,
        diagnostics: JSON.parse(r.diagnostics_json) as Diagnostic[],
      }
    );
  }
}
