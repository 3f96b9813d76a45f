/** Every protocol rule the code cites (`§4.7`, `SOTW-09`, ...) exists in docs/xds-protocol.md. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const doc = readFileSync(projectPath('docs', 'xds-protocol.md'), 'utf8');
const sections = new Set([...doc.matchAll(/^#+ (\d+(?:\.\d+)*)\.? /gm)].map((m) => m[1]));
const rules = new Set([...doc.matchAll(/^- ((?:SOTW|DELTA|REST|FS)-\d+) /gm)].map((m) => m[1]));

test('the document has the sections and rules the code is written against', () => {
  for (const s of ['3.5', '4.5', '4.6', '4.7', '4.8', '5.3', '6.4']) assert.ok(sections.has(s), `§${s}`);
  assert.ok(rules.has('SOTW-09') && rules.has('DELTA-04') && rules.has('REST-07'));
});

test('every citation in src/ and test/ resolves', () => {
  const missing: string[] = [];
  for (const f of [...files(projectPath('src')), ...files(projectPath('test'))]) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/§(\d+(?:\.\d+)*)/g)) if (!sections.has(m[1])) missing.push(`${f}: §${m[1]}`);
    for (const m of text.matchAll(/\b((?:SOTW|DELTA|REST|FS)-\d+)\b/g))
      if (!rules.has(m[1])) missing.push(`${f}: ${m[1]}`);
  }
  assert.equal(missing, []);
});

test.run();
