/**
 * Inputs that would cost far more than they say: a file of 20,000 trivial documents, aliases that
 * expand a document many times over, and a tree with thousands of problems. Each is refused with
 * a located, bounded report, and the last good version keeps serving.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_DIAGNOSTICS, checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { MAX_DOCUMENTS_PER_FILE, MAX_DOCUMENTS_PER_TREE } from '../../src/source/parse-yaml.ts';
import { spawnSync } from 'node:child_process';
import { projectPath } from '../../src/shared/paths.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('a file of 20,000 documents is refused before it is parsed', async () => {
  const started = performance.now();
  const r = await checkTree(writeTree({ ...BASE, 'many.yaml': 'a: 1\n---\n'.repeat(20_000) }));
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    `many.yaml:1:1: error FXDS_YAML_LIMIT: up to 20001 documents in one file (counting --- and ... lines); ` +
      `the limit is ${MAX_DOCUMENTS_PER_FILE} (split the file)`,
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
  assert.match(formatDiagnostic(d), /^amp\.yaml:1:1: error FXDS_YAML_LIMIT: aliases expand this document to \d+ bytes/);
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

test('documents ended by ... lines count too: 690,000 of them are refused before any parse', async () => {
  const started = performance.now();
  const r = await checkTree(writeTree({ ...BASE, 'dots.yaml': '1\n...\n'.repeat(690_000) }));
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    `dots.yaml:1:1: error FXDS_YAML_LIMIT: up to 690001 documents in one file (counting --- and ... lines); ` +
      `the limit is ${MAX_DOCUMENTS_PER_FILE} (split the file)`,
  ]);
  assert.ok(performance.now() - started < 5000);
});

test('the documents of the whole tree are bounded: 60 files just under the per-file limit are refused unparsed', async () => {
  const files: Record<string, string> = { ...BASE };
  for (let i = 0; i < 60; i++) files[`f${i}.yaml`] = 'a: 1\n---\n'.repeat(MAX_DOCUMENTS_PER_FILE - 2) + 'a: 1\n';
  const r = await checkTree(writeTree(files));
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    `<tree>: error FXDS_YAML_LIMIT: the tree holds up to ${60 * (MAX_DOCUMENTS_PER_FILE - 1) + 4} documents; ` +
      `the limit is ${MAX_DOCUMENTS_PER_TREE}`,
  ]);
});

test('a tree just under the limits, every document invalid, is refused with a bounded report (no stack overflow)', async () => {
  // ~95,000 problems: lists of them were once spread into function arguments.
  const files: Record<string, string> = { ...BASE };
  for (let i = 0; i < 19; i++) files[`f${i}.yaml`] = '1\n---\n'.repeat(MAX_DOCUMENTS_PER_FILE - 1) + '1\n';
  const r = await checkTree(writeTree(files));
  assert.is(r.config, undefined);
  assert.is(r.diagnostics.length, MAX_DIAGNOSTICS + 1);
  assert.is(r.diagnostics[0]!.code, 'FXDS_DOC_NOT_A_MAP');
  assert.match(r.diagnostics[MAX_DIAGNOSTICS]!.message, /more problems not shown \(95\d\d\d errors in all\)/);
});

test('a stage that fails on a tree refuses it with the reason: recorded as a rejection, printed by validate', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir, { envoyCheck: { binaries: ['/nonexistent/envoy'] } });
  try {
    assert.is(app.cache.current, undefined, 'nothing served: the first tree could not be checked');
    const rejection = JSON.stringify(app.stores.rejections.latest());
    assert.match(rejection, /FXDS_CHECK_FAILED/);
    assert.match(rejection, /the tree could not be checked: Envoy binary not found: \/nonexistent\/envoy/);
  } finally {
    await app.close();
  }
  const cli = spawnSync(
    process.execPath,
    ['--import', 'tsx', projectPath('src', 'cli', 'main.ts'), 'validate', dir, '--envoy', '/nonexistent/envoy'],
    { cwd: projectPath(), encoding: 'utf8' },
  );
  assert.is(cli.status, 1);
  assert.match(cli.stderr, /<tree>: error FXDS_CHECK_FAILED: the tree could not be checked: Envoy binary not found/);
});

test.run();
