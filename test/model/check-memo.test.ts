/**
 * One-document checks are not run again for documents of unchanged files, and what they reported
 * is replayed: a problem in a file nobody touched stays reported when another file changes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PipelineCaches } from '../../src/compile/caches.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const BROKEN = {
  ...BASE,
  'dup.yaml': 'kind: Service\nname: dup\nendpoints:\n  - address: 10.9.0.1:80\n  - address: 10.9.0.1:80\n',
  'shadow.yaml': `kind: VirtualHost
name: shadow
domains: [shadow.example.com]
routes:
  - { match: { prefix: / }, to: web }
  - { match: { prefix: /api }, to: api }
`,
};

test('problems of unchanged files are reported again after another file changed', async () => {
  const caches = new PipelineCaches();
  const dir = writeTree(BROKEN);
  const first = await checkTree(dir, caches);
  const problems = first.diagnostics.map(formatDiagnostic);
  assert.ok(
    problems.some((p) => p.includes('dup.yaml:5') && /duplicate endpoint/.test(p)),
    problems.join('\n'),
  );
  assert.ok(
    problems.some((p) => p.includes('shadow.yaml')),
    problems.join('\n'),
  );
  writeTree({ 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') }, dir);
  const second = await checkTree(dir, caches);
  assert.equal(second.diagnostics.map(formatDiagnostic), problems);
  // And the result is what a fresh check says.
  assert.equal((await checkTree(dir, new PipelineCaches())).diagnostics.map(formatDiagnostic), problems);
});

test.run();
