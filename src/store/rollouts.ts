import type { RolloutState } from '../rollout/state.ts';
import type { Sqlite } from './sqlite.ts';

export interface StoredRollout {
  id: number;
  state: RolloutState;
}

/** Rollouts and their state, saved on every transition so a restart resumes where it was. */
export class RolloutStore {
  constructor(private readonly db: Sqlite) {}

  start(state: RolloutState, at = new Date()): number {
    const info = this.db
      .prepare('INSERT INTO rollouts (from_version, to_version, status, state_json, updated_at) VALUES (?, ?, ?, ?, ?)')
      .run(state.from, state.to, state.status, JSON.stringify(state), at.toISOString());
    return Number(info.lastInsertRowid);
  }

  save(id: number, state: RolloutState, at = new Date()): void {
    this.db
      .prepare('UPDATE rollouts SET status = ?, state_json = ?, updated_at = ? WHERE id = ?')
      .run(state.status, JSON.stringify(state), at.toISOString(), id);
  }

  /** The rollout in progress or halted, if any (at most one is). */
  active(): StoredRollout | undefined {
    const r = this.db
      .prepare("SELECT id, state_json FROM rollouts WHERE status IN ('progressing', 'halted') ORDER BY id DESC LIMIT 1")
      .get() as { id: number; state_json: string } | undefined;
    return r && { id: r.id, state: JSON.parse(r.state_json) as RolloutState };
  }

  latest(): StoredRollout | undefined {
    const r = this.db.prepare('SELECT id, state_json FROM rollouts ORDER BY id DESC LIMIT 1').get() as
      { id: number; state_json: string } | undefined;
    return r && { id: r.id, state: JSON.parse(r.state_json) as RolloutState };
  }
}
