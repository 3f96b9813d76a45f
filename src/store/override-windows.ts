import type { Sqlite } from './sqlite.ts';

/** An override of the newest applied tree, as kept. */
export interface StoredWindow {
  readonly id: string;
  readonly what: string;
  /** When it was first served (ms since the epoch). */
  readonly startedAt: number;
  /** When it falls due (ms since the epoch). */
  readonly deadline: number;
  /** Past its deadline and no longer served. */
  readonly expired: boolean;
}

/** The overrides of the newest applied tree (src/model/expiry.ts), kept across restarts. */
export class OverrideWindowStore {
  constructor(private readonly db: Sqlite) {}

  list(): StoredWindow[] {
    const rows = this.db
      .prepare('SELECT id, what, started_at, deadline, expired FROM override_windows ORDER BY deadline, id')
      .all() as { id: string; what: string; started_at: number; deadline: number; expired: number }[];
    return rows.map((r) => ({
      id: r.id,
      what: r.what,
      startedAt: r.started_at,
      deadline: r.deadline,
      expired: r.expired === 1,
    }));
  }

  /** Start times (ms since the epoch) by override id. */
  started(): Map<string, number> {
    return new Map(this.list().map((w) => [w.id, w.startedAt]));
  }

  /**
   * The overrides of the newest applied tree: new ones are recorded with their start (an existing
   * one keeps its own), those the tree no longer holds are forgotten, so the table is as large as
   * the tree's overrides.
   */
  keep(windows: readonly StoredWindow[]): void {
    const kept = new Map(this.list().map((w) => [w.id, w]));
    const changed = windows.filter((w) => {
      const k = kept.get(w.id);
      return !k || k.deadline !== w.deadline || k.expired !== w.expired || k.what !== w.what;
    });
    const ids = new Set(windows.map((w) => w.id));
    const stale = [...kept.keys()].filter((id) => !ids.has(id));
    // Nothing to write (a tree without overrides, or with the same ones): no transaction, no sync.
    if (!changed.length && !stale.length) return;
    const put = this.db.prepare(
      'INSERT INTO override_windows (id, what, started_at, deadline, expired) VALUES (?, ?, ?, ?, ?) ' +
        'ON CONFLICT (id) DO UPDATE SET what = excluded.what, deadline = excluded.deadline, expired = excluded.expired',
    );
    const drop = this.db.prepare('DELETE FROM override_windows WHERE id = ?');
    this.db.transaction(() => {
      for (const w of changed) put.run(w.id, w.what, w.startedAt, w.deadline, w.expired ? 1 : 0);
      for (const id of stale) drop.run(id);
    })();
  }
}
