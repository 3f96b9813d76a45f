/**
 * Parsed files kept in the database (src/store/parse-store.ts) behind the source cache: what comes
 * back is what the parser made, values JSON cannot carry included; only the tree last read is
 * kept; a row that cannot be read, or the store failing, means parsing again, never a wrong tree.
 */
import Database from 'better-sqlite3';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';
import { SourceCache } from '../../src/source/source-cache.ts';
import { migrate } from '../../src/store/migrate.ts';
import { ParseStore } from '../../src/store/parse-store.ts';

function store() {
  const db = new Database(':memory:');
  migrate(db, projectPath('migrations'));
  return { db, parses: new ParseStore(db) };
}

/** What the pipeline does after a read: keep the tree's parses, then store the new ones. */
function done(cache: SourceCache, files: Parameters<SourceCache['retainOnly']>[0]): void {
  cache.retainOnly(files);
  cache.flush();
}

const ODD = 'kind: Service\nname: odd\nweights: [.nan, .inf, -.inf, -0, 0x10, ~]\n---\nkind: Service\nname: b\n';

test('a stored parse is the parse: documents, lines and values JSON would lose', () => {
  const { parses } = store();
  const first = new SourceCache(parses);
  const made = first.parse('a.yaml', ODD);
  done(first, [made]);
  const second = new SourceCache(parses);
  const back = second.parse('a.yaml', ODD);
  assert.equal(second.stats, { parsed: 0, fromStore: 1 });
  assert.equal(back, made);
  const weights = (back.documents[0]!.value as { weights: unknown[] }).weights;
  assert.ok(Number.isNaN(weights[0]) && weights[1] === Infinity && Object.is(weights[3], -0), String(weights));
  assert.is(back.documents[1]!.line, 5);
});

test('only the tree last read is kept; another file or content is parsed, not looked up wrongly', () => {
  const { db, parses } = store();
  const cache = new SourceCache(parses);
  const a = cache.parse('a.yaml', 'kind: Service\nname: a\n');
  const b = cache.parse('b.yaml', 'kind: Service\nname: b\n');
  done(cache, [a, b]);
  const a2 = cache.parse('a.yaml', 'kind: Service\nname: a2\n');
  done(cache, [a2, b]);
  const rows = db.prepare('SELECT file FROM parsed_files ORDER BY file').pluck().all();
  assert.equal(rows, ['a.yaml', 'b.yaml'], 'the replaced parse of a.yaml is gone');
  const fresh = new SourceCache(parses);
  fresh.parse('b.yaml', 'kind: Service\nname: b\n');
  fresh.parse('c.yaml', 'kind: Service\nname: b\n');
  assert.equal(fresh.stats, { parsed: 1, fromStore: 1 }, 'same text under another path is not a hit');
});

test('rows of another parser version are not read, and are dropped at the next save', () => {
  const { db, parses } = store();
  const cache = new SourceCache(parses);
  const a = cache.parse('a.yaml', 'kind: Service\nname: a\n');
  done(cache, [a]);
  db.prepare("UPDATE parsed_files SET parser = 'yaml@0.0.0/0'").run();
  const again = new SourceCache(parses);
  const a2 = again.parse('a.yaml', 'kind: Service\nname: a\n');
  assert.equal(again.stats, { parsed: 1, fromStore: 0 });
  done(again, [a2]);
  assert.equal(db.prepare('SELECT parser FROM parsed_files').pluck().all().length, 1);
  const current = db.prepare('SELECT parser FROM parsed_files').pluck().get() as string;
  assert.not.equal(current, 'yaml@0.0.0/0');
  // The fast path's parser is part of the id: a row of another js-yaml is not read either.
  const otherJsYaml = current.replace(/js-yaml@[^/]+/, 'js-yaml@0.0.0');
  assert.not.equal(otherJsYaml, current);
  db.prepare('UPDATE parsed_files SET parser = ?').run(otherJsYaml);
  const third = new SourceCache(parses);
  third.parse('a.yaml', 'kind: Service\nname: a\n');
  assert.equal(third.stats, { parsed: 1, fromStore: 0 });
});

test('an unreadable row or a failing store: the file is parsed again and the failure reported', () => {
  const { db, parses } = store();
  const cache = new SourceCache(parses);
  done(cache, [cache.parse('a.yaml', 'kind: Service\nname: a\n')]);
  db.prepare("UPDATE parsed_files SET data = X'00ff'").run();
  const failures: string[] = [];
  const again = new SourceCache(parses, (err, what) => failures.push(`${what}: ${(err as Error).message}`));
  const a = again.parse('a.yaml', 'kind: Service\nname: a\n');
  assert.equal(again.stats, { parsed: 1, fromStore: 0 });
  assert.is((a.documents[0]!.value as { name: string }).name, 'a');
  db.close();
  done(again, [again.parse('b.yaml', 'kind: Service\nname: b\n')]);
  assert.equal(
    failures.map((f) => f.split(':')[0]),
    ['read', 'read', 'write'],
    failures.join('; '),
  );
  assert.equal(again.stats, { parsed: 2, fromStore: 0 }, 'b.yaml parsed although the store is gone');
});

test.run();
