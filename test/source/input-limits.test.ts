/**
 * Inputs that would cost far more than they say: a file of 20,000 trivial documents, aliases that
 * expand a document many times over, and a tree with thousands of problems. Each is refused with
 * a located, bounded report, and the last good version keeps serving.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_DIAGNOSTICS, checkTree } from '../../src/app/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { MAX_DOCUMENTS_PER_FILE } from '../../src/source/parse-yaml.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('a file of 20,000 documents is refused before it is parsed', async () => {
  const started = performance.now();
  const r = await checkTree(writeTree({ ...BASE, 'many.yaml': 'a: 1\n---\n'.repeat(20_000) }));
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    `many.yaml:1:1: error FXDS_YAML_LIMIT: about 20001 documents in one file; the limit is ` +
      `${MAX_DOCUMENTS_PER_FILE} (split the file)`,
  ]);
  assert.ok(performance.now() - started < 5000);
});

test('aliases that expand a document to megabytes are refused at the document', async () => {
  const route = `{ match: { prefix: /a${'b'.repeat(200)} }, to: web, timeout: 3s, retries: { on: [5xx], count: 2 } }`;
  const big = `kind: VirtualHost
name: amplified
domains: [amp.example.com]
x-routes: &r [${Array.from({ length: 60 }, () => route).join(', ')}]
routes: [${Array.from({ length: 99 }, () => '*r').join(', ')}]
`;
  const r = await checkTree(writeTree({ ...BASE, 'amp.yaml': big }));
  const d = r.diagnostics.find((x) => x.code === 'FXDS_YAML_LIMIT');
  assert.ok(d, JSON.stringify(r.diagnostics.slice(0, 3)));
  assert.match(
    formatDiagnostic(d!),
    /^amp\.yaml:1:1: error FXDS_YAML_LIMIT: aliases expand this document to \d+ bytes/,
  );
});

test('thousands of problems: the first ones and a count; the server keeps serving and stores a small rejection', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  try {
    const good = app.cache.current!.versionId;
    writeTree({ 'bad.yaml': Array.from({ length: 3000 }, (_, i) => `kind: Nope\nname: n${i}\n`).join('---\n') }, dir);
    const outcome = (await app.reload()) as { status: string; diagnostics: { message: string }[] };
    assert.is(outcome.status, 'rejected');
    assert.is(outcome.diagnostics.length, MAX_DIAGNOSTICS + 1);
    assert.match(
      outcome.diagnostics[MAX_DIAGNOSTICS]!.message,
      /and 2800 more problems not shown \(3000 errors in all\)/,
    );
    assert.ok(JSON.stringify(app.stores.rejections.latest()).length < 100_000, 'a bounded rejection row');
    assert.is(app.cache.current!.versionId, good);
  } finally {
    await app.close();
  }
});

test.run();
