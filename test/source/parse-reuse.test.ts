/**
 * A changed file is parsed document by document (src/source/parse-yaml.ts): the documents whose
 * text did not change keep their values. Whatever the edit, the result must be the whole file's
 * parse (same documents at the same index and line, same problems), and a kept value must be the
 * earlier object.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_DOCUMENTS_PER_FILE, parseYamlFile } from '../../src/source/parse-yaml.ts';

const svc = (n: number, ip = n) => `kind: Service\nname: s${n}\nendpoints:\n  - address: 10.0.0.${ip}:80\n`;
const join = (...docs: string[]) => docs.join('---\n');

const EDITS: { name: string; before: string; after: string; kept: number }[] = [
  {
    name: 'one document changed',
    before: join(svc(1), svc(2), svc(3)),
    after: join(svc(1), svc(2, 9), svc(3)),
    kept: 2,
  },
  {
    name: 'a line added shifts the next ones',
    before: join(svc(1), svc(2)),
    after: join(`${svc(1)}# note\n`, svc(2)),
    kept: 1,
  },
  { name: 'a document inserted first', before: join(svc(1), svc(2)), after: join(svc(0), svc(1), svc(2)), kept: 2 },
  { name: 'a document removed', before: join(svc(1), svc(2), svc(3)), after: join(svc(1), svc(3)), kept: 2 },
  {
    name: 'leading comments',
    before: `# head\n---\n${join(svc(1), svc(2))}`,
    after: `# head\n---\n${join(svc(1), svc(2, 7))}`,
    kept: 1,
  },
  {
    name: 'starts with a marker',
    before: `---\n${join(svc(1), svc(2))}`,
    after: `---\n${join(svc(1, 5), svc(2))}`,
    kept: 1,
  },
  { name: 'empty documents', before: join(svc(1), '', svc(2)), after: join(svc(1), '', svc(2, 4)), kept: 1 },
  {
    name: 'a trailing marker',
    before: `${join(svc(1), svc(2))}---\n`,
    after: `${join(svc(1), svc(2, 3))}---\n`,
    kept: 1,
  },
  {
    name: 'a block scalar with an indented marker line',
    before: join(svc(1), 'kind: Service\nname: s2\ndescription: |\n  ---\n  text\nendpoints: []\n'),
    after: join(svc(1, 8), 'kind: Service\nname: s2\ndescription: |\n  ---\n  text\nendpoints: []\n'),
    kept: 1,
  },
  {
    name: 'a marker with content on its line',
    before: `${svc(1)}--- # two\n${svc(2)}`,
    after: `${svc(1, 3)}--- # two\n${svc(2)}`,
    kept: 1,
  },
  {
    name: 'CRLF line ends',
    before: join(svc(1), svc(2)).replace(/\n/g, '\r\n'),
    after: join(svc(1), svc(2, 6)).replace(/\n/g, '\r\n'),
    kept: 1,
  },
  {
    name: 'a syntax error: the whole file reports it',
    before: join(svc(1), svc(2)),
    after: join(svc(1), 'kind: [Service\n'),
    kept: 0,
  },
  {
    name: 'an error fixed: nothing was kept from the broken parse',
    before: join(svc(1), 'kind: [\n'),
    after: join(svc(1), svc(2)),
    kept: 0,
  },
  {
    name: 'document end markers: not cut',
    before: join(svc(1), svc(2)),
    after: `${svc(1)}...\n---\n${svc(2)}`,
    kept: 0,
  },
  {
    name: 'over the document limit: refused as a whole file is',
    before: join(svc(1), svc(2)),
    after: join(svc(1), ...Array.from({ length: MAX_DOCUMENTS_PER_FILE }, () => '')),
    kept: 0,
  },
  {
    name: 'directives: not cut',
    before: join(svc(1), svc(2)),
    after: `%YAML 1.2\n---\n${join(svc(1), svc(2))}`,
    kept: 0,
  },
  {
    name: 'aliases inside one document',
    before: join(svc(1), 'a: &x 1\nb: *x\n'),
    after: join(svc(1, 2), 'a: &x 1\nb: *x\n'),
    kept: 1,
  },
];

for (const e of EDITS)
  test(`reparse: ${e.name}`, () => {
    const before = parseYamlFile('f.yaml', e.before);
    const after = parseYamlFile('f.yaml', e.after, undefined, before);
    const whole = parseYamlFile('f.yaml', e.after);
    assert.equal(after.documents, whole.documents, 'the documents of the whole file');
    assert.equal(after.diagnostics, whole.diagnostics, 'its problems');
    if (e.name.startsWith('over the document limit')) assert.match(after.diagnostics[0]?.message ?? '', /the limit is/);
    const earlier = new Set<unknown>(before.documents.map((d) => d.value).filter((v) => v !== null));
    const kept = after.documents.filter((d) => earlier.has(d.value)).length;
    assert.is(kept, e.kept, 'values kept from the earlier parse');
  });

test('reparse: random edits of a 40-document file', () => {
  let seed = 3;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed >>> 16) % n);
  const docs = Array.from({ length: 40 }, (_, i) => svc(i));
  let before = parseYamlFile('f.yaml', join(...docs));
  for (let step = 0; step < 200; step++) {
    const i = rnd(docs.length);
    const op = rnd(4);
    if (op === 0) docs[i] = svc(i, rnd(250));
    else if (op === 1) docs.splice(i, 0, svc(100 + rnd(100)));
    else if (op === 2 && docs.length > 1) docs.splice(i, 1);
    else docs[i] = `${docs[i]}# comment ${step}\n`;
    const text = join(...docs);
    const after = parseYamlFile('f.yaml', text, undefined, before);
    assert.equal(after.documents, parseYamlFile('f.yaml', text).documents, `step ${step}`);
    before = after;
  }
});

test.run();
