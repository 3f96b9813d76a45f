/**
 * Negative golden cases: a tree that must be refused (a feature's src/features/<name>/rejected/
 * <variant>/input, the others' test/golden/rejected/<case>/input) and the
 * diagnostics an operator reads for it (expected.txt: `file:line:col: severity CODE: subject
 * message`, one per line). UPDATE_GOLDEN=1 rewrites them; review the diff like code.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic, hasErrors } from '../../src/shared/diagnostics.ts';
import { refusedCases } from '../helpers/golden-cases.ts';

const UPDATE = process.env.UPDATE_GOLDEN === '1';
for (const { name, input, expected } of refusedCases()) {
  test(`refused with the expected diagnostics: ${name}`, async () => {
    const r = await checkTree(input);
    assert.ok(hasErrors(r.diagnostics), 'the tree is refused');
    assert.is(r.config, undefined, 'nothing would be served from it');
    const text = `${r.diagnostics.map(formatDiagnostic).join('\n')}\n`;
    if (UPDATE) writeFileSync(expected, text);
    assert.ok(existsSync(expected), `no expected.txt for ${name}; run UPDATE_GOLDEN=1 npm test`);
    assert.fixture(text, readFileSync(expected, 'utf8'));
  });
}

test.run();
