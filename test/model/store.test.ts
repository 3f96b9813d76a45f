import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { listMigrations, migrate } from '../../src/model/migrate.ts';
import { Store } from '../../src/model/store.ts';
import { emptyModel } from '../../src/model/types.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { tempDir } from '../helpers/tree.ts';

test('migrations are numbered without gaps and all apply to an empty database, recorded in order', () => {
  const files = listMigrations(projectPath('migrations'));
  assert.ok(files.length >= 1);
  files.forEach((f, i) => assert.is(f.version, i + 1));
  const db = new Database(':memory:');
  assert.equal(
    migrate(db, projectPath('migrations')),
    files.map((f) => f.version),
  );
  const rows = db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all();
  assert.equal(
    rows,
    files.map((f) => ({ version: f.version, name: f.name })),
  );
  assert.equal(migrate(db, projectPath('migrations')), [], 'a second run applies nothing');
});

test('a failing migration leaves neither its tables nor its record', () => {
  const dir = tempDir();
  writeFileSync(join(dir, '0001_ok.sql'), 'CREATE TABLE a (x INTEGER) STRICT;');
  writeFileSync(join(dir, '0002_bad.sql'), 'CREATE TABLE b (x INTEGER) STRICT; INSERT INTO nope VALUES (1);');
  const db = new Database(':memory:');
  assert.throws(() => migrate(db, dir), /nope/);
  assert.equal(
    db.prepare("SELECT name FROM sqlite_master WHERE type='table' AND name IN ('a','b') ORDER BY name").all(),
    [{ name: 'a' }],
  );
  assert.equal(db.prepare('SELECT version FROM schema_migrations').all(), [{ version: 1 }]);
});

test('a database newer than this build is refused; gaps in numbering are refused', () => {
  const dir = tempDir();
  writeFileSync(join(dir, '0001_ok.sql'), 'SELECT 1;');
  const db = new Database(':memory:');
  migrate(db, dir);
  db.prepare("INSERT INTO schema_migrations VALUES (5, 'future', 'x')").run();
  assert.throws(() => migrate(db, dir), /newer than this build/);
  const gap = tempDir();
  writeFileSync(join(gap, '0001_a.sql'), 'SELECT 1;');
  writeFileSync(join(gap, '0003_c.sql'), 'SELECT 1;');
  assert.throws(() => listMigrations(gap), /without gaps/);
});

test('versions persist across reopen, in WAL mode with synchronous=FULL', () => {
  const dir = tempDir();
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'x.db');
  const s1 = new Store(path);
  const model = { ...emptyModel(), services: [{ kind: 'Service' as const, name: 'a', endpoints: [] }] };
  const id = s1.insertVersion({
    treeHash: 't',
    modelHash: 'm',
    sourceKind: 'directory',
    source: '/cfg',
    model,
    warnings: [],
  });
  assert.is(s1.db.pragma('journal_mode', { simple: true }), 'wal');
  assert.is(s1.db.pragma('synchronous', { simple: true }), 2);
  s1.close();
  const s2 = new Store(path);
  const latest = s2.latestVersion()!;
  assert.is(latest.id, id);
  assert.equal(latest.model, model);
  assert.is(s2.db.pragma('integrity_check', { simple: true }), 'ok');
  s2.close();
});

test.run();
