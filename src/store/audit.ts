import { TablePruner, type LogRetention } from './retention.ts';
import type { Sqlite } from './sqlite.ts';

export interface AuditEntry {
  at: string;
  actor: string;
  action: string;
  detail: string;
}

/** Who decided what at run time (rollback, pin, unpin): append-only, bounded and expiring (retention.ts). */
export class AuditLog {
  private readonly pruner: TablePruner;

  constructor(
    private readonly db: Sqlite,
    retention: LogRetention,
  ) {
    this.pruner = new TablePruner(db, 'audit_log', 'at', retention);
  }

  append(actor: string, action: string, detail: unknown, at = new Date()): void {
    this.db
      .prepare('INSERT INTO audit_log (at, actor, action, detail) VALUES (?, ?, ?, ?)')
      .run(at.toISOString(), actor, action, JSON.stringify(detail));
    this.pruner.added();
  }

  list(limit = 100): AuditEntry[] {
    return this.db
      .prepare('SELECT at, actor, action, detail FROM audit_log ORDER BY id DESC LIMIT ?')
      .all(limit) as AuditEntry[];
  }
}
