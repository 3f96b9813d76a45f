/**
 * The reference pages are generated from the schemas the server validates with; a schema change
 * without `npm run docs` leaves a stale page, and this test names it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { REFERENCE_PAGES } from '../../src/packaging/reference-docs.ts';
import { projectPath } from '../../src/shared/paths.ts';

for (const [file, render] of Object.entries(REFERENCE_PAGES)) {
  test(`${file} is the page generated from its schema (npm run docs)`, () => {
    assert.fixture(readFileSync(projectPath(file), 'utf8'), render());
  });
}

test('every kind and every field of the model has a row', () => {
  const page = REFERENCE_PAGES['docs/reference/yaml.md']!();
  for (const row of ['| `kind` | `"EnvoyPatch"`', '| `routes[].retries.backoff.base` |', '| `registration.ttl` |']) {
    assert.ok(page.includes(row), row);
  }
});

test.run();
