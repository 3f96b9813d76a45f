/**
 * The fast YAML path (src/source/fast-yaml.ts) answers only where yaml, the parser of record, gives
 * the same documents: the same values (key order, -0, NaN and all), the same lines, and no problem.
 * Checked on a table of features it must leave to yaml, and on thousands of mutants of config files
 * (characters inserted, deleted and replaced, lines doubled and re-indented), where every answer of
 * the fast path is compared with yaml's parse.
 */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadPlainYaml } from '../../src/source/fast-yaml.ts';
import { parseWithYaml, parseYamlFile } from '../../src/source/parse-yaml.ts';
import { serviceYaml, vhostYaml } from '../../bench/lib/generate.ts';
import { random } from '../helpers/random.ts';

/** A value written so that equal means equal for yaml: key order, -0, NaN, Infinity, types. */
function exact(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'number' ? `number:${Object.is(v, -0) ? '-0' : String(v)}` : v,
  );
}

/** What yaml makes of `text`, in the fast path's shape; undefined when yaml has any problem with it. */
function byYaml(text: string): string | undefined {
  const parsed = parseWithYaml('f.yaml', text, 'h');
  if (parsed.diagnostics.length) return undefined;
  return exact(parsed.documents.map((d) => ({ index: d.index, line: d.line, value: d.value })));
}

function byFastPath(text: string): string | undefined {
  const plain = loadPlainYaml(text);
  return plain && exact(plain);
}

const TRICKY = `# leading comment

kind: Service   # trailing comment
name: "quoted \\u00e9 \\t escapes"
single: 'it''s'
plain: multi
  line plain
  scalar
literal: |
  line one
    indented
  line three
folded: >-
  folded
  text

keep: |+
  kept

numbers: [0, -0, +1, 0o17, 0x1F, 1e3, -1.5E-3, .5, 5., .inf, -.Inf, .nan, 08, 1_000, 0b11, 12:30]
words: [null, Null, ~, true, False, yes, no, on, off, y, n]
empty:
'': empty key
"__proto__": { polluted: true }
toString: shadowed
nested:
  - { a: 1, b: [x, y], c: { d: e } }
  - - deep
    - [flow, in, block]
  - ? explicit key
    : explicit value
url: http://example.com/a#b
colon: a:b
---
kind: VirtualHost
name: vh
routes: []
`;

const CORPUS = [
  TRICKY,
  serviceYaml(7),
  `${serviceYaml(1)}---\n${serviceYaml(2)}`,
  vhostYaml(3, 4, 10),
  serviceYaml(9).replaceAll('\n', '\r\n'),
  ...['config/services/services.yaml', 'config/services/edge.yaml', 'config/services/groups.yaml'].map((f) =>
    readFileSync(f, 'utf8'),
  ),
];

test('plain config files take the fast path and give what yaml gives', () => {
  for (const text of CORPUS) {
    assert.ok(loadPlainYaml(text), text.slice(0, 60));
    assert.is(byFastPath(text), byYaml(text));
  }
});

const LEFT_TO_YAML: [string, string][] = [
  ['an anchor', 'a: &x 1\n'],
  ['an alias', 'a: 1\nb: *x\n'],
  ['a tag', 'a: !!str 1\n'],
  ['a local tag', 'a: !thing 1\n'],
  ['a directive', '%YAML 1.2\n---\na: 1\n'],
  ['a number as key', '1: x\n'],
  ['null as key', '~: x\n'],
  ['a boolean as key', 'true: x\n'],
  ['a collection as key', '? [a, b]\n: x\n'],
  ['a duplicate key', 'a: 1\na: 2\n'],
  ['a duplicate key, quoted once', 'a: 1\n"a": 2\n'],
  ['a sequence as document', '- a\n'],
  ['a scalar as document', 'just text\n'],
  ['an empty document', 'a: 1\n---\n'],
  ['a flow end at a line start', 'a: [\n  1\n]\n'],
  ['a document end marker', 'a: 1\n...\n'],
  ['a carriage return alone', 'a: 1\rb: 2\n'],
  ['a byte order mark', '\ufeffa: 1\n'],
  ['nesting deeper than 64', `a: ${'['.repeat(70)}${']'.repeat(70)}\n`],
  ['a syntax error', 'a: "open\n'],
  ['a tab as indentation', 'a:\n\tb: 1\n'],
  ['a tab after indentation', 'a:\n  - ? b\n    \t: c\n'],
  ['a comment without a space', 'a: b#c\nd: "e"#f\n'],
];

for (const [what, text] of LEFT_TO_YAML) {
  test(`left to yaml: ${what}`, () => {
    assert.is(loadPlainYaml(text), undefined);
    // parseYamlFile still parses it (with yaml): the same answer as yaml alone.
    assert.equal(parseYamlFile('f.yaml', text, 'h'), parseWithYaml('f.yaml', text, 'h'));
  });
}

const ALPHABET = [...' \n\t\r:-#,[]{}?|>\'"!&*%@`\\~.0123456789eExo_+', 'a', 'true', 'null', '\\u0041', '---', '...'];

/** One to three edits of `text`: a character inserted, deleted or replaced, a line doubled or re-indented. */
function mutate(text: string, next: () => number): string {
  let out = text;
  const edits = 1 + Math.floor(next() * 3);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(next() * (out.length + 1));
    const piece = ALPHABET[Math.floor(next() * ALPHABET.length)]!;
    const kind = Math.floor(next() * 5);
    if (kind === 0) out = out.slice(0, at) + piece + out.slice(at);
    else if (kind === 1) out = out.slice(0, at) + out.slice(at + 1);
    else if (kind === 2) out = out.slice(0, at) + piece + out.slice(at + 1);
    else {
      const lines = out.split('\n');
      const l = Math.floor(next() * lines.length);
      if (kind === 3) lines.splice(l, 0, lines[l]!);
      else lines[l] = (next() < 0.5 ? ' ' : '') + lines[l]!.slice(next() < 0.5 ? 1 : 0);
      out = lines.join('\n');
    }
  }
  return out;
}

const MUTANTS_PER_FILE = 800;

test(`on ${MUTANTS_PER_FILE} mutants of each corpus file, every fast answer is yaml's`, () => {
  const next = random(16);
  let fast = 0;
  let total = 0;
  for (const text of CORPUS) {
    for (let i = 0; i < MUTANTS_PER_FILE; i++) {
      const mutant = mutate(text, next);
      const mine = byFastPath(mutant);
      total++;
      if (mine === undefined) continue;
      fast++;
      assert.is(mine, byYaml(mutant), JSON.stringify(mutant));
    }
  }
  // Neither side empty: the fast path answered for many mutants, and left many to yaml.
  assert.ok(fast > total * 0.2 && fast < total * 0.9, `${fast} of ${total} by the fast path`);
});

test.run();
