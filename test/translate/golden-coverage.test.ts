/**
 * Every field of every kind of the YAML model appears in at least one golden case (or the bundled
 * example), so every option's translation is pinned by a golden file; a field valid only in some
 * places may be covered where it is refused (a rejected-tree golden pins that diagnostic). A field
 * added to the schema without a case fails here, by name.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { modelFieldPaths } from '../../src/packaging/reference-docs.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { acceptedCases, fieldsUsed, isCovered, refusedCases } from '../helpers/golden-cases.ts';

test('every field of the model is used by a golden case', () => {
  const used = fieldsUsed([
    ...acceptedCases().map((c) => c.input),
    projectPath('config', 'services'),
    ...refusedCases().map((c) => c.input),
  ]);
  const missing = [...new Set(modelFieldPaths())].filter((p) => !isCovered(p, used));
  assert.equal(missing, [], `fields no golden case uses:\n  ${missing.join('\n  ')}`);
});

test('the coverage check sees a field no case uses (self-check)', () => {
  const used = fieldsUsed([projectPath('config', 'services')]);
  assert.not.ok(isCovered('Listener.tracing.zipkin.path', used));
  assert.ok(isCovered('Listener.port', used));
});

test.run();
