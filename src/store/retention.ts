/**
 * How long the logs fleetxds keeps grow: every log table is bounded in rows and expires by age, so
 * nothing a client or a stream of pushes does can fill the disk. Pruned as entries are added (every
 * PRUNE_EVERY inserts, and at open), never on a timer of its own.
 */
import type { Sqlite } from './sqlite.ts';

export interface LogRetention {
  /** Rows kept at most; the oldest go first. */
  rows: number;
  /** Entries older than this many days go. */
  days: number;
}

export interface RetentionSettings {
  nacks: LogRetention & {
    /** NACKs kept per node id (each node's newest). */
    perNode: number;
    /** NACKs kept per (type, version): more proxies rejecting one version add nothing new to read. */
    perVersion: number;
  };
  rejections: LogRetention;
  audit: LogRetention;
}

export const DEFAULT_RETENTION: RetentionSettings = {
  nacks: { rows: 10_000, days: 30, perNode: 20, perVersion: 1_000 },
  rejections: { rows: 1_000, days: 90 },
  audit: { rows: 100_000, days: 400 },
};

const PRUNE_EVERY = 64;

/** Prunes one log table: by age, then by count (ids grow with time). */
export class TablePruner {
  private inserts = 0;
  private readonly byAge;
  private readonly byCount;

  constructor(
    db: Sqlite,
    table: string,
    atColumn: string,
    private readonly retention: LogRetention,
  ) {
    this.byAge = db.prepare(`DELETE FROM ${table} WHERE ${atColumn} < ?`);
    this.byCount = db.prepare(`DELETE FROM ${table} WHERE id <= (SELECT max(id) FROM ${table}) - ?`);
    this.prune();
  }

  /** After an insert: prunes every PRUNE_EVERY inserts. */
  added(): void {
    if (++this.inserts % PRUNE_EVERY === 0) this.prune();
  }

  prune(now = Date.now()): void {
    this.byAge.run(new Date(now - this.retention.days * 86_400_000).toISOString());
    this.byCount.run(this.retention.rows);
  }
}

type Partially<T> = { [K in keyof T]?: Partial<T[K]> };

/** The settings' `retention` over the defaults. */
export function retentionOf(given: Partially<RetentionSettings> | undefined): RetentionSettings {
  return {
    nacks: { ...DEFAULT_RETENTION.nacks, ...given?.nacks },
    rejections: { ...DEFAULT_RETENTION.rejections, ...given?.rejections },
    audit: { ...DEFAULT_RETENTION.audit, ...given?.audit },
  };
}
