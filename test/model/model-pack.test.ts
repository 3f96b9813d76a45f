/**
 * Models are stored per source file, content-addressed (src/store/model-pack.ts): what is read
 * back is the model that was stored (same lists, order, origins and model hash), a one-file push
 * stores one chunk, and version rows written before packing still load.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PipelineCaches } from '../../src/app/caches.ts';
import { checkTree } from '../../src/app/check-tree.ts';
import type { Model } from '../../src/model/types.ts';
import { openStores } from '../../src/store/database.ts';
import { ModelPacker, unpackModel } from '../../src/store/model-pack.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const service = (name: string, address: string) =>
  `kind: Service\nname: ${name}\nendpoints:\n  - address: ${address}\n`;
const TREE = {
  ...BASE,
  'more/a.yaml': [service('zeta', '10.1.0.1:80'), service('alpha', '10.1.0.2:80')].join('---\n'),
  'more/b.yaml': service('mid', '10.1.0.3:80'),
};

async function modelOf(dir: string, caches: PipelineCaches): Promise<Model> {
  const check = await checkTree(dir, caches);
  assert.ok(check.model, JSON.stringify(check.diagnostics));
  return check.model!;
}

test('pack then unpack gives the same model (lists in name order, origins) and the same model hash', async () => {
  const caches = new PipelineCaches();
  const model = await modelOf(writeTree(TREE), caches);
  const packed = new ModelPacker().pack(model);
  const chunks = new Map(packed.built.map((c) => [c.hash, c.json]));
  assert.is(chunks.size, 4, 'one chunk per source file');
  const back = unpackModel(packed.skeleton, (hashes) => new Map(hashes.map((h) => [h, chunks.get(h)!])));
  assert.equal(back, model);
  assert.equal(
    back.services.map((s) => s.name),
    ['alpha', 'api', 'mid', 'web', 'zeta'],
  );
  assert.is(new PipelineCaches().modelHash(back), caches.modelHash(model));
});

test('after a one-file change only that file is packed again', async () => {
  const caches = new PipelineCaches();
  const dir = writeTree(TREE);
  const packer = new ModelPacker();
  const first = packer.pack(await modelOf(dir, caches));
  writeTree({ 'more/b.yaml': service('mid', '10.1.0.9:80') }, dir);
  const second = packer.pack(await modelOf(dir, caches));
  assert.is(second.built.length, 1);
  assert.match(second.built[0]!.json, /"file":"more\/b.yaml"/);
  const a = JSON.parse(first.skeleton).chunks as string[];
  const b = JSON.parse(second.skeleton).chunks as string[];
  assert.is(a.filter((h) => !b.includes(h)).length, 1, 'the other chunks are the same');
  // A document that moved within its file (same content, other line) is a change of that file too.
  writeTree({ 'more/a.yaml': [service('alpha', '10.1.0.2:80'), service('zeta', '10.1.0.1:80')].join('---\n') }, dir);
  const third = packer.pack(await modelOf(dir, caches));
  assert.is(third.built.length, 1);
  assert.match(third.built[0]!.json, /"file":"more\/a.yaml"/);
});

test('the store reads packed versions and rows that hold the whole model', async () => {
  const stores = openStores(':memory:');
  const caches = new PipelineCaches();
  const model = await modelOf(writeTree(TREE), caches);
  const input = {
    treeHash: 't',
    modelHash: caches.modelHash(model),
    sourceKind: 'directory' as const,
    source: 'x',
    model,
    warnings: [],
  };
  const id = stores.revisions.insert(input, {});
  assert.equal(stores.revisions.get(id)!.model, model);
  // A row from before packing: model_json is the model itself.
  const legacy = unpackModel(JSON.stringify(model), () => {
    throw new Error('no chunks for a whole model');
  });
  assert.equal(legacy, model);
  stores.close();
});

test.run();
