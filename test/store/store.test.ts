import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openStores } from '../../src/store/database.ts';
import { listMigrations, migrate } from '../../src/store/migrate.ts';
import { emptyModel } from '../../src/model/types.ts';
import type { EncodedResource } from '../../src/snapshot/encoder.ts';
import { chunksOf } from '../../src/snapshot/key-chunks.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { tempDir } from '../helpers/tree.ts';

test('migrations are numbered without gaps and all apply to an empty database, recorded in order', () => {
  const files = listMigrations(projectPath('migrations'));
  assert.ok(files.length >= 1);
  files.forEach((f, i) => {
    assert.is(f.version, i + 1);
  });
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
  const s1 = openStores(path);
  const model = { ...emptyModel(), services: [{ kind: 'Service' as const, name: 'a', endpoints: [] }] };
  const version = {
    treeHash: 't',
    modelHash: 'm',
    sourceKind: 'directory' as const,
    source: '/cfg',
    model,
    warnings: [],
  };
  const id = s1.revisions.insert(version, { default: { types: [], secrets: [] } });
  assert.equal(s1.settings(), { journalMode: 'wal', synchronous: 2, integrity: 'ok' });
  s1.close();
  const s2 = openStores(path);
  const latest = s2.revisions.latest()!;
  assert.is(latest.id, id);
  assert.equal(latest.model, model);
  assert.equal(s2.revisions.manifest(id), { default: [] });
  assert.is(s2.settings().integrity, 'ok');
  s2.close();
});

test('a resource shared by versions is stored once; a diff names what changed per group', () => {
  const s = openStores(':memory:');
  const model = emptyModel();
  const v = { treeHash: 't', modelHash: 'm', sourceKind: 'directory' as const, source: '/cfg', model, warnings: [] };
  const res = (key: string, name: string) => ({
    key,
    kind: 'cluster' as const,
    name,
    json: { name },
    any: Buffer.from(key),
  });
  // A type as a version names it: read only if the store does not have that type version yet.
  let reads = 0;
  const type = (version: string, list: ReturnType<typeof res>[]) => ({
    kind: 'cluster' as const,
    version,
    chunks: () => (reads++, chunksOf(list as unknown as EncodedResource[])),
  });
  const edgeA = type('a', [res('k1', 'web'), res('k2', 'api')]);
  const a = s.revisions.insert(v, { edge: { types: [edgeA], secrets: ['cert'] } });
  const b = s.revisions.insert(v, {
    edge: { types: [type('b', [res('k1', 'web'), res('k3', 'api'), res('k4', 'db')])], secrets: [] },
    mesh: { types: [type('c', [res('k1', 'web')])], secrets: [] },
  });
  assert.is(reads, 3);
  const c = s.revisions.insert(v, { edge: { types: [edgeA], secrets: ['cert'] } });
  assert.is(reads, 3, 'a type already stored is not read again');
  assert.equal(s.revisions.manifest(c), { edge: ['k1', 'k2', 'secret:cert'] });
  assert.equal([...s.revisions.resources(Object.values(s.revisions.manifest(a)!).flat())!.keys()].sort(), ['k1', 'k2']);
  assert.equal([...s.revisions.resources(Object.values(s.revisions.manifest(b)!).flat())!.keys()].sort(), [
    'k1',
    'k3',
    'k4',
  ]);
  assert.equal(s.revisions.diff(a, b), {
    edge: { added: ['cluster/db'], changed: ['cluster/api'], removed: ['secret/cert'] },
    mesh: { added: ['cluster/web'], changed: [], removed: [] },
  });
  assert.is(s.revisions.diff(a, 99), undefined);
  s.close();
});

test('a type is stored by key chunks: a version that changes one resource of many stores its chunk', () => {
  const path = join(tempDir(), 'chunks.db');
  const s = openStores(path);
  const db = new Database(path, { readonly: true });
  const v = {
    treeHash: 't',
    modelHash: 'm',
    sourceKind: 'directory' as const,
    source: '/cfg',
    model: emptyModel(),
    warnings: [],
  };
  const res = (i: number, rev = 0) => ({
    key: `key-${i}-${rev}`.padEnd(64, '0'),
    kind: 'cluster' as const,
    name: `svc-${String(i).padStart(5, '0')}`,
    json: { name: `svc-${i}`, rev },
    any: Buffer.from(`${i}.${rev}`),
  });
  const before = Array.from({ length: 2000 }, (_, i) => res(i));
  const after = before.map((r, i) => (i === 700 ? res(i, 1) : r));
  const type = (version: string, list: ReturnType<typeof res>[]) => ({
    kind: 'cluster' as const,
    version,
    chunks: () => chunksOf(list as unknown as EncodedResource[]),
  });
  const rows = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const a = s.revisions.insert(v, { edge: { types: [type('a', before)], secrets: [] } });
  const chunks = rows('key_chunks');
  assert.ok(chunks > 10 && chunks < 100, `${chunks} chunks for 2,000 resources`);
  const b = s.revisions.insert(v, { edge: { types: [type('b', after)], secrets: [] } });
  assert.is(rows('key_chunks'), chunks + 1, 'one chunk more');
  assert.is(rows('encoded_resources'), 2001, 'one resource more');
  assert.equal(s.revisions.manifest(a), { edge: before.map((r) => r.key) });
  assert.equal(s.revisions.manifest(b), { edge: after.map((r) => r.key) });
  assert.equal(s.revisions.diff(a, b), { edge: { added: [], changed: ['cluster/svc-00700'], removed: [] } });
  db.close();
  s.close();
});

test.run();
