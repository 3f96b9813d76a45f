import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';

const FILE_RE = /^([0-9]{4})_([a-z0-9_]+)\.sql$/;

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir: string): MigrationFile[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const out: MigrationFile[] = [];
  for (const f of files) {
    const m = FILE_RE.exec(f);
    if (!m) throw new Error(`migration file ${f} is not named NNNN_description.sql`);
    const version = Number(m[1]);
    if (version !== out.length + 1)
      throw new Error(`migrations must be numbered 0001, 0002, ... without gaps; found ${f} after ${out.length}`);
    out.push({ version, name: m[2] ?? '', sql: readFileSync(join(dir, f), 'utf8') });
  }
  return out;
}

/**
 * Applies pending migrations in order, each in its own transaction together with its row in
 * `schema_migrations`, so a failed migration leaves neither its tables nor its record behind.
 * Refuses a database newer than this build (downgrade protection).
 */
export function migrate(db: Database.Database, dir: string): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ' +
      'TEXT NOT NULL) STRICT',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  const files = listMigrations(dir);
  const newest = Math.max(0, ...applied);
  if (newest > files.length)
    throw new Error(`database schema version ${newest} is newer than this build (${files.length}); refusing to start`);
  const ran: number[] = [];
  for (const m of files) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
    }).immediate();
    ran.push(m.version);
  }
  return ran;
}
