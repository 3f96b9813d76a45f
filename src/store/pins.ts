import type { Sqlite } from './sqlite.ts';

export interface Pin {
  group: string;
  versionId: number;
  pinnedAt: string;
  actor: string;
}

interface PinRow {
  node_group: string;
  version_id: number;
  pinned_at: string;
  actor: string;
}

/** Node groups held at an earlier version while the rest of the fleet moves on. */
export class PinStore {
  constructor(private readonly db: Sqlite) {}

  list(): Pin[] {
    const rows = this.db
      .prepare('SELECT node_group, version_id, pinned_at, actor FROM group_pins ORDER BY node_group')
      .all() as PinRow[];
    return rows.map((r) => ({ group: r.node_group, versionId: r.version_id, pinnedAt: r.pinned_at, actor: r.actor }));
  }

  set(group: string, versionId: number, actor: string, at = new Date()): void {
    this.db
      .prepare(
        `INSERT INTO group_pins (node_group, version_id, pinned_at, actor) VALUES (?, ?, ?, ?)
         ON CONFLICT (node_group) DO UPDATE
         SET version_id = excluded.version_id, pinned_at = excluded.pinned_at, actor = excluded.actor`,
      )
      .run(group, versionId, at.toISOString(), actor);
  }

  /** False when the group was not pinned. */
  delete(group: string): boolean {
    return this.db.prepare('DELETE FROM group_pins WHERE node_group = ?').run(group).changes > 0;
  }
}
