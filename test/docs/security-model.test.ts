/**
 * docs/security.md is the threat model: one row per surface, each naming the tests that prove it.
 * A row must name at least one test, and each test it names must exist (a `test(` whose name
 * starts with the quoted words in that file): the table cannot drift from the suites.
 */
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';

const doc = readFileSync(projectPath('docs', 'security.md'), 'utf8');
const rows = doc
  .split('\n')
  .filter((l) => l.startsWith('| ') && !l.startsWith('| Surface') && !l.startsWith('|---'))
  .map((l) => l.split(' | ').map((c) => c.replace(/^\| ?| ?\|$/g, '')));

/** The names of every test declared in a file (`test('…'` or `test("…"`). */
function testNames(file: string): string[] {
  const text = readFileSync(projectPath(file), 'utf8');
  return [...text.matchAll(/^\s*test\(\s*(['"`])((?:\\.|(?!\1).)*)\1/gms)].map((m) => m[2]!.replace(/\\(.)/g, '$1'));
}

test('every surface has a row with who, credential, what may change, bounds and tests', () => {
  assert.ok(rows.length >= 10, `${rows.length} rows`);
  for (const r of rows) {
    assert.is(r.length, 6, `six columns: ${r[0]}`);
    for (const cell of r) assert.ok(cell.trim().length > 0, `an empty cell in ${r[0]}`);
  }
  const surfaces = rows.map((r) => r[0]!);
  for (const name of [
    'gRPC xDS port',
    'REST xDS port',
    'Registration API',
    'Admin API',
    'config tree',
    'git push',
    'PostgreSQL',
    'package',
  ])
    assert.ok(
      surfaces.some((s) => s.includes(name)),
      `a row for ${name}`,
    );
});

test('each test a row names exists', () => {
  const missing: string[] = [];
  let named = 0;
  for (const r of rows) {
    const refs = [...r[5]!.matchAll(/`(test\/[^`]+\.test\.ts)`: "([^"]+)"/g)];
    assert.ok(refs.length > 0, `${r[0]} names no test`);
    for (const [, file, words] of refs) {
      named++;
      if (!existsSync(projectPath(file!))) missing.push(`${file} (no such file)`);
      else if (!testNames(file!).some((n) => n.startsWith(words!))) missing.push(`${file}: "${words}"`);
    }
  }
  assert.equal(missing, [], 'tests named in docs/security.md that do not exist');
  assert.ok(named >= 30, `${named} tests named`);
});

test.run();
