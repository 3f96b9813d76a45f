/**
 * Models are stored per source file, content-addressed (src/store/model-pack.ts): what is read
 * back is the model that was stored (same lists, order, origins and model hash), a one-file push
 * stores one chunk, and version rows written before packing still load.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PipelineCaches } from '../../src/compile/caches.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { modelHash } from '../../src/model/files.ts';
import { originOf, type Model } from '../../src/model/types.ts';
import { openStores } from '../../src/store/database.ts';
import { packModel, unpackModel } from '../../src/store/model-pack.ts';
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
  return check.model;
}

const everyOrigin = (m: Model) => [...m.services, ...m.listeners, ...m.virtualHosts].map((d) => [d.name, originOf(d)]);

test('pack then unpack gives the same model (lists in name order, origins) and the same model hash', async () => {
  const caches = new PipelineCaches();
  const model = await modelOf(writeTree(TREE), caches);
  const packed = packModel(model);
  const chunks = new Map(packed.chunks.map((c) => [c.hash, c.json]));
  assert.is(chunks.size, 4, 'one chunk per source file');
  const back = unpackModel(packed.skeleton, (hashes) => new Map(hashes.map((h) => [h, chunks.get(h)!])));
  assert.equal(back, model);
  assert.equal(everyOrigin(back), everyOrigin(model));
  assert.ok(everyOrigin(back).every(([, o]) => o !== undefined));
  assert.equal(
    back.services.map((s) => s.name),
    ['alpha', 'api', 'mid', 'web', 'zeta'],
  );
  assert.is(modelHash(back), modelHash(model));
  assert.is(packModel(back).skeleton, packed.skeleton);
});

test('after a one-file change only that file is packed again', async () => {
  const caches = new PipelineCaches();
  const dir = writeTree(TREE);
  const chunksOf = (m: Model) => packModel(m).chunks;
  const first = chunksOf(await modelOf(dir, caches));
  writeTree({ 'more/b.yaml': service('mid', '10.1.0.9:80') }, dir);
  const model = await modelOf(dir, caches);
  const second = chunksOf(model);
  const fresh = second.filter((c) => !first.includes(c));
  assert.is(fresh.length, 1, 'the chunks of unchanged files are the very same objects');
  assert.match(fresh[0]!.json, /"file":"more\/b.yaml"/);
  assert.is(first.filter((c) => !second.some((d) => d.hash === c.hash)).length, 1, 'the others hash the same');
  // A document that moved within its file (same content, other line) is a change of that file too.
  writeTree({ 'more/a.yaml': [service('alpha', '10.1.0.2:80'), service('zeta', '10.1.0.1:80')].join('---\n') }, dir);
  const third = chunksOf(await modelOf(dir, caches));
  const moved = third.filter((c) => !second.includes(c));
  assert.is(moved.length, 1);
  assert.match(moved[0]!.json, /"file":"more\/a.yaml"/);
  assert.is.not(modelHash(await modelOf(dir, caches)), modelHash(model));
});

test('the store reads packed versions and rows that hold the whole model', async () => {
  const stores = openStores(':memory:');
  const caches = new PipelineCaches();
  const model = await modelOf(writeTree(TREE), caches);
  const input = {
    treeHash: 't',
    modelHash: modelHash(model),
    sourceKind: 'directory' as const,
    source: 'x',
    model,
    warnings: [],
  };
  const id = stores.revisions.insert(input, {});
  assert.equal(stores.revisions.get(id)!.model, model);
  assert.equal(everyOrigin(stores.revisions.get(id)!.model), everyOrigin(model));
  // A row from before packing: model_json is the model itself, with its origins by `Kind/name`.
  const origins = Object.fromEntries(model.services.map((s) => [`Service/${s.name}`, originOf(s)]));
  const legacy = unpackModel(JSON.stringify({ ...model, origins }), () => {
    throw new Error('no chunks for a whole model');
  });
  assert.equal(legacy, model);
  assert.equal(legacy.services.map(originOf), model.services.map(originOf));
  stores.close();
});

test.run();
