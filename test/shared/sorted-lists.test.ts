/**
 * Lists in name order patched where names changed (src/shared/sorted-lists.ts), and a type's key
 * chunks cut again around changed names (src/snapshot/key-chunks.ts): a patch must give what
 * computing from nothing gives.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { changedNames, patchByName, patchedFrom, recordDelta } from '../../src/shared/sorted-lists.ts';
import type { EncodedResource } from '../../src/snapshot/encoder.ts';
import { chunksOf, patchChunks } from '../../src/snapshot/key-chunks.ts';

const item = (name: string, v = 0) => ({ name, v });

const PATCHES: { name: string; list: string[]; changes: [string, number | undefined][]; want: string[] }[] = [
  { name: 'replace', list: ['a', 'b', 'c'], changes: [['b', 1]], want: ['a', 'b1', 'c'] },
  { name: 'insert first', list: ['b', 'c'], changes: [['a', 1]], want: ['a1', 'b', 'c'] },
  { name: 'insert last', list: ['a', 'b'], changes: [['z', 1]], want: ['a', 'b', 'z1'] },
  { name: 'insert between', list: ['a', 'c'], changes: [['b', 1]], want: ['a', 'b1', 'c'] },
  { name: 'remove', list: ['a', 'b', 'c'], changes: [['b', undefined]], want: ['a', 'c'] },
  { name: 'remove a missing name', list: ['a', 'c'], changes: [['b', undefined]], want: ['a', 'c'] },
  { name: 'into nothing', list: [], changes: [['a', 1]], want: ['a1'] },
  {
    name: 'several, in any order',
    list: ['b', 'd', 'f'],
    changes: [
      ['f', undefined],
      ['a', 1],
      ['d', 2],
      ['e', 3],
    ],
    want: ['a1', 'b', 'd2', 'e3'],
  },
];

for (const row of PATCHES)
  test(`patchByName: ${row.name}`, () => {
    const list = row.list.map((n) => item(n));
    const changes = new Map(row.changes);
    const out = patchByName(list, changes.keys(), (n) =>
      changes.get(n) === undefined ? undefined : item(n, changes.get(n)),
    );
    assert.equal(
      out.map((x) => `${x.name}${x.v || ''}`),
      row.want,
    );
    assert.equal(
      list.map((x) => x.name),
      row.list,
      'the input list is not changed',
    );
  });

test('a recorded delta is known only from the list it was patched from', () => {
  const a = [item('a')];
  const b = patchByName(a, ['b'], (n) => item(n));
  const c = patchByName(b, ['a'], () => undefined);
  recordDelta(b, a, new Set(['b']));
  recordDelta(c, b, new Set(['a']));
  assert.equal([...changedNames(a, b)!], ['b']);
  assert.equal([...changedNames(b, c)!], ['a']);
  assert.equal([...changedNames(c, c)!], [], 'the same list: nothing changed');
  assert.is(changedNames(a, c), undefined, 'two patches apart: unknown (the caller visits every item)');
  assert.is(changedNames(undefined, b), undefined);
  assert.is(patchedFrom(b)!.from, a);
  assert.is(patchedFrom(a), undefined);
});

const resource = (name: string, rev: number) => ({ name, key: `${name}#${rev}` }) as unknown as EncodedResource;
const summary = (chunks: ReturnType<typeof chunksOf>) => chunks.map((c) => [c.hash, c.resources.map((r) => r.name)]);

test('key chunks patched around random changes are the chunks of the result', () => {
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed >>> 16) % n);
  let current = new Map<string, number>();
  for (let i = 0; i < 3000; i++) current.set(`svc-${rnd(100000)}`, 0);
  const sorted = (m: Map<string, number>) =>
    [...m].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, rev]) => resource(n, rev));
  let chunks = chunksOf(sorted(current));
  assert.ok(chunks.length > 20 && chunks.length < 120, `${chunks.length} chunks for 3,000 names`);
  for (let step = 0; step < 300; step++) {
    const next = new Map(current);
    const names = new Set<string>();
    const n = 1 + rnd(step % 10 === 0 ? 200 : 4);
    for (let k = 0; k < n; k++) {
      const op = rnd(3);
      const existing = [...next.keys()][rnd(next.size)]!;
      const name = op === 0 ? `svc-${rnd(100000)}` : existing;
      if (op === 2) next.delete(name);
      else next.set(name, step + 1);
      names.add(name);
    }
    const list = sorted(next);
    const patched = patchChunks(chunks, list, names);
    assert.equal(summary(patched), summary(chunksOf(list)), `step ${step}`);
    const kept = patched.filter((c) => chunks.includes(c)).length;
    if (n <= 4) assert.ok(kept >= patched.length - 3 * n, `step ${step}: ${kept} of ${patched.length} chunks kept`);
    current = next;
    chunks = patched;
  }
});

test('key chunks: everything removed, then added again', () => {
  const all = ['a', 'b', 'c', 'd'].map((n) => resource(n, 0));
  const none = patchChunks(chunksOf(all), [], ['a', 'b', 'c', 'd']);
  assert.equal(none, []);
  assert.equal(summary(patchChunks(none, all, ['a', 'b', 'c', 'd'])), summary(chunksOf(all)));
});

test.run();
