/**
 * The YAML an operator copies from a feature's page is a tree fleetxds accepts: each block of the
 * pages below validates without an error (warnings allowed), with a Guard that allows a tree serving
 * nothing (a page shows services, not always the listeners that call them).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { docBlocks } from '../helpers/doc-blocks.ts';
import { writeTree } from '../helpers/tree.ts';

const PAGES = ['docs/locality.md'];

for (const b of docBlocks(PAGES).filter((x) => x.lang === 'yaml'))
  test(`${b.page}:${b.line}: the tree validates`, async () => {
    const dir = writeTree({ 'page.yaml': b.text, 'guard.yaml': 'kind: Guard\nname: doc\nallowEmpty: true\n' });
    const { diagnostics } = await checkTree(dir);
    const errors = diagnostics.filter((d) => d.severity === 'error').map((d) => d.message);
    assert.equal(errors, []);
  });

test.run();
