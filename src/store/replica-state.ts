import type { Sqlite } from './sqlite.ts';

/** The keys a replica keeps beside its versions (one row each). */
export type ReplicaStateKey =
  /** Sequence number of the last shared decision applied (src/decision-log/). */
  | 'decisions.appliedSeq'
  /** After a rollback: the tree hash and model hash it replaced, not applied again from the directory. */
  | 'rollback.suppressedTree'
  | 'rollback.suppressedModel';

/** Small facts of this replica that must survive a restart. */
export class ReplicaStateStore {
  constructor(private readonly db: Sqlite) {}

  get(key: ReplicaStateKey): string | undefined {
    const row = this.db.prepare('SELECT value FROM replica_state WHERE key = ?').get(key) as
      { value: string } | undefined;
    return row?.value;
  }

  /** Sets a key, or removes it when `value` is undefined. */
  set(key: ReplicaStateKey, value: string | undefined): void {
    if (value === undefined) this.db.prepare('DELETE FROM replica_state WHERE key = ?').run(key);
    else
      this.db
        .prepare('INSERT INTO replica_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?')
        .run(key, value, value);
  }
}
