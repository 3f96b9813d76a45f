/**
 * The YAML an operator copies from a feature's page is a tree fleetxds accepts: each block of whole
 * documents on the pages below validates without an error (warnings allowed), beside a small tree
 * that serves something (a page shows services, not always the listeners that call them).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { docBlocks } from '../helpers/doc-blocks.ts';
import { writeTree } from '../helpers/tree.ts';

const PAGES = ['docs/locality.md', 'docs/configuration.md'];

/** A tree that serves something, for the blocks to join (a page shows services, not always who calls them). */
const BESIDE = `kind: Service
name: doc-test-backend
endpoints: [{ address: 10.255.0.1:80 }]
---
kind: Listener
name: doc-test
port: 10999
virtualHosts: [doc-test]
---
kind: VirtualHost
name: doc-test
domains: [doc-test.invalid]
routes: [{ to: doc-test-backend }]
`;

// Blocks of whole documents (a block that starts elsewhere shows a part of one).
for (const b of docBlocks(PAGES).filter((x) => x.lang === 'yaml' && x.text.startsWith('kind:')))
  test(`${b.page}:${b.line}: the tree validates`, async () => {
    const dir = writeTree({ 'page.yaml': b.text, 'beside.yaml': BESIDE });
    const { diagnostics } = await checkTree(dir);
    const errors = diagnostics.filter((d) => d.severity === 'error').map((d) => d.message);
    assert.equal(errors, []);
  });

test.run();
