/**
 * The assembler keeps the model from one tree to the next and patches what changed
 * (src/model/assemble.ts). Whatever the sequence of edits, what it gives must be what a fresh
 * assembler gives for the same tree: the same lists in the same order, the same problems, the same
 * origins and model hash.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ModelAssembler } from '../../src/model/assemble.ts';
import { newCheckMemo } from '../../src/model/checks.ts';
import { modelHash } from '../../src/model/files.ts';
import type { ParsedFile, SourceSet } from '../../src/model/sources.ts';
import { LIST_OF, originOf, type Doc, type Model } from '../../src/model/types.ts';
import { validateSourceSet } from '../../src/model/validate.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { parseYamlFile } from '../../src/source/parse-yaml.ts';

const service = (name: string, ip: number) =>
  `kind: Service\nname: ${name}\nendpoints:\n  - address: 10.0.0.${ip}:80\n`;
const vhost = (name: string, targets: string[]) =>
  `kind: VirtualHost\nname: ${name}\ndomains: [${name}.example.com]\nroutes:\n` +
  targets.map((t, i) => `  - { match: { prefix: /r${i}/ }, to: ${t} }\n`).join('');

/** A tree in memory; a file keeps its parse (the same object) until its text changes, as in the source cache. */
class Tree {
  readonly texts = new Map<string, string>();
  private parses = new Map<string, ParsedFile>();
  source(): SourceSet {
    const files = [...this.texts.keys()].sort().map((f) => {
      const text = this.texts.get(f)!;
      let p = this.parses.get(f);
      if (!p || p.text !== text) this.parses.set(f, (p = parseYamlFile(f, text)));
      return p;
    });
    return { root: '/cfg', treeHash: '', files, diagnostics: [] };
  }
}

function snapshot(m: Model | undefined) {
  if (!m) return undefined;
  return Object.values(LIST_OF).map((list) => ((m[list] ?? []) as Doc[]).map((d) => ({ d, o: originOf(d) })));
}

function sameAsFresh(tree: Tree, assembler: ModelAssembler, memo: ReturnType<typeof newCheckMemo>, step: string) {
  const source = tree.source();
  const kept = validateSourceSet(source, assembler, memo);
  const fresh = validateSourceSet(source);
  assert.equal(kept.diagnostics.map(formatDiagnostic), fresh.diagnostics.map(formatDiagnostic), step);
  assert.equal(snapshot(kept.model), snapshot(fresh.model), step);
  if (kept.model) assert.is(modelHash(kept.model), modelHash(fresh.model!), step);
  return kept;
}

test('a sequence of random edits: every step gives what a fresh assembler gives', () => {
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed >>> 16) % n);
  const tree = new Tree();
  const names = Array.from({ length: 30 }, (_, i) => `svc-${String(i).padStart(2, '0')}`);
  const files = ['a.yaml', 'b.yaml', 'sub/c.yaml', 'z.yaml'];
  const content = new Map<string, string[]>(files.map((f) => [f, []]));
  names.forEach((n, i) => content.get(files[i % 3]!)!.push(service(n, i)));
  // The services of this virtual host are never edited: routes elsewhere dangle only on purpose.
  const pinned = [service('pinned-a', 1), service('pinned-b', 2), vhost('site', ['pinned-a', 'pinned-b'])];
  const write = () => {
    tree.texts.clear();
    tree.texts.set('pinned.yaml', pinned.join('---\n'));
    for (const [f, docs] of content) if (docs.length) tree.texts.set(f, docs.join('---\n'));
  };
  write();
  /** Drops broken documents, dangling routes and duplicates (the later ones): a valid tree again. */
  const repair = () => {
    const seen = new Set<string>();
    for (const f of [...files].sort())
      content.set(
        f,
        content.get(f)!.filter((d) => {
          const n = /name: (\S+)/.exec(d)![1]!;
          if (/broken|gone-/.test(d) || seen.has(n)) return false;
          seen.add(n);
          return true;
        }),
      );
  };
  const assembler = new ModelAssembler();
  const memo = newCheckMemo();
  let valid = 0;
  let invalid = 0;
  for (let step = 0; step < 300; step++) {
    const f = files[rnd(files.length)]!;
    const docs = content.get(f)!;
    const kind = rnd(8);
    const name = names[rnd(names.length)]!;
    if (kind === 0 && docs.length)
      docs[rnd(docs.length)] = service(`${name}-r${rnd(3)}`, rnd(250)); // maybe a duplicate
    else if (kind === 1)
      docs.push(service(`${name}-x${rnd(4)}`, rnd(250))); // add
    else if (kind === 2 && docs.length)
      docs.splice(rnd(docs.length), 1); // remove
    else if (kind === 3 && docs.length) {
      // move a document to another file
      const [d] = docs.splice(rnd(docs.length), 1);
      content.get(files[rnd(files.length)]!)!.push(d!);
    } else if (kind === 4)
      docs.push('kind: Service\nname: broken\nendpoints: 3\n'); // schema error
    else if (kind === 5)
      docs.push(vhost(`vh-${rnd(3)}`, [names[rnd(names.length)]!, `gone-${rnd(2)}`])); // dangling
    else if (kind === 6) repair();
    else docs.reverse(); // same documents, other places
    write();
    const r = sameAsFresh(tree, assembler, memo, `step ${step}`);
    if (r.model) valid++;
    else invalid++;
  }
  assert.ok(valid > 30 && invalid > 30, `both valid and invalid trees were seen (${valid} valid, ${invalid} invalid)`);
});

test('a one-file edit reports what changed: the documents of that file, nothing else', () => {
  const tree = new Tree();
  tree.texts.set('a.yaml', [service('a1', 1), service('a2', 2)].join('---\n'));
  tree.texts.set('b.yaml', service('b1', 3));
  const assembler = new ModelAssembler();
  const first = assembler.assemble(tree.source().files);
  assert.is(first.changed, undefined, 'the first tree is all new');
  tree.texts.set('a.yaml', [service('a1', 1), service('a2', 9)].join('---\n'));
  const second = assembler.assemble(tree.source().files);
  assert.equal([...second.changed!].sort(), ['Service/a1', 'Service/a2']);
  assert.is(second.model.services[2], first.model.services[2], 'b1 is the same object');
  tree.texts.delete('b.yaml');
  assert.equal([...assembler.assemble(tree.source().files).changed!], ['Service/b1']);
});

test('a duplicate is reported at the later definition, in path order, however the files arrived', () => {
  const tree = new Tree();
  const assembler = new ModelAssembler();
  tree.texts.set('b.yaml', service('dup', 2));
  assert.ok(validateSourceSet(tree.source(), assembler).model);
  tree.texts.set('a.yaml', service('dup', 1));
  const r = validateSourceSet(tree.source(), assembler);
  assert.equal(r.diagnostics.map(formatDiagnostic), [
    'b.yaml:2:7: error FXDS_DUPLICATE_NAME: Service/dup name: Service "dup" is already defined at a.yaml:1',
  ]);
});

test.run();
