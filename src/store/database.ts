/**
 * The SQLite file every store lives in. WAL for concurrent readers (CLI, admin) and
 * synchronous=FULL: an apply happens once per push, so making "applied" mean "durable" is free.
 * The handle stays inside `src/store/`: each store owns its tables, and the rest of the server
 * sees only their methods.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { projectPath } from '../shared/paths.ts';
import { AuditLog } from './audit.ts';
import { migrate } from './migrate.ts';
import { NackLog } from './nacks.ts';
import { ParseStore } from './parse-store.ts';
import { PinStore } from './pins.ts';
import { RejectionLog } from './rejections.ts';
import { RevisionStore } from './revisions.ts';
import { ReplicaStateStore } from './replica-state.ts';
import { RolloutStore } from './rollouts.ts';
import { DEFAULT_RETENTION, type RetentionSettings } from './retention.ts';
import { RegistrationStore } from './registrations.ts';
import { OverrideWindowStore } from './override-windows.ts';

/** Every store of one database file, and the few things done across them. */
export interface Stores {
  readonly revisions: RevisionStore;
  readonly pins: PinStore;
  readonly audit: AuditLog;
  readonly nacks: NackLog;
  readonly rejections: RejectionLog;
  readonly rollouts: RolloutStore;
  readonly replicaState: ReplicaStateStore;
  /** Endpoints registered at run time. */
  readonly registrations: RegistrationStore;
  /** Parsed YAML files by content: a restart parses only what changed. */
  readonly parses: ParseStore;
  /** When each expiring override of the tree was first served. */
  readonly overrideWindows: OverrideWindowStore;
  /** Runs `fn` in one transaction (BEGIN IMMEDIATE): a decision and its audit entry land together. */
  atomically<T>(fn: () => T): T;
  /** The database file (`:memory:` in tests). */
  readonly path: string;
  /** The durability settings in force (journal mode, synchronous level), for checks and status. */
  settings(): { journalMode: string; synchronous: number; integrity: string };
  /** Moves the WAL into the main file (tests that read the file's bytes). */
  checkpoint(): void;
  close(): void;
}

export function openStores(
  path: string,
  retention: RetentionSettings = DEFAULT_RETENTION,
  migrationsDir = projectPath('migrations'),
): Stores {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  migrate(db, migrationsDir);
  return {
    revisions: new RevisionStore(db),
    pins: new PinStore(db),
    audit: new AuditLog(db, retention.audit),
    nacks: new NackLog(db, retention.nacks),
    rejections: new RejectionLog(db, retention.rejections),
    rollouts: new RolloutStore(db),
    replicaState: new ReplicaStateStore(db),
    registrations: new RegistrationStore(db),
    parses: new ParseStore(db),
    overrideWindows: new OverrideWindowStore(db),
    atomically: (fn) => db.transaction(fn).immediate(),
    path,
    settings: () => ({
      journalMode: String(db.pragma('journal_mode', { simple: true })),
      synchronous: Number(db.pragma('synchronous', { simple: true })),
      integrity: String(db.pragma('integrity_check', { simple: true })),
    }),
    checkpoint: () => void db.pragma('wal_checkpoint(TRUNCATE)'),
    close: () => {
      if (db.open) db.close();
    },
  };
}
