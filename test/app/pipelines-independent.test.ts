/**
 * Two pipelines in one process share nothing: each has its own caches (source, translation,
 * encodings), so neither sees the other's objects, and each builds the same bytes on its own.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PipelineCaches } from '../../src/compile/caches.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

test('two pipelines build equal bytes from distinct objects; a second build in one pipeline reuses its own', async () => {
  const dir = writeTree(BASE);
  const a = new PipelineCaches();
  const b = new PipelineCaches();
  const ra = await checkTree(dir, a);
  const rb = await checkTree(dir, b);
  const ga = ra.config!.groups.get('default')!;
  const gb = rb.config!.groups.get('default')!;
  for (const kind of ['cluster', 'listener', 'route'] as const) {
    assert.is(ga.types[kind].version, gb.types[kind].version);
    for (const [name, res] of ga.types[kind].resources) {
      const other = gb.types[kind].resources.get(name)!;
      assert.is.not(other, res, `${kind}/${name}: not shared between pipelines`);
      assert.ok(other.any.equals(res.any), `${kind}/${name}: same bytes`);
    }
  }
  assert.is(b.encoder.stats.encoded, a.encoder.stats.encoded, 'the second pipeline encoded everything itself');
  const before = a.encoder.stats.encoded;
  const again = await checkTree(dir, a);
  assert.is(a.encoder.stats.encoded, before, 'its own second build encodes nothing');
  assert.is(
    again.config!.groups.get('default')!.types.cluster.resources.get('api'),
    ga.types.cluster.resources.get('api'),
  );
});

test.run();
