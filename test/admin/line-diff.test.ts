/** The history view's line diff (admin/page/line-diff.ts), case by case. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lineDiff, MAX_LINES } from '../../src/admin/page/line-diff.ts';

const show = (before: string, after: string) =>
  lineDiff(before, after)
    .lines.map((l) => `${l.op}${l.text}`)
    .join('|');

const CASES: [name: string, before: string, after: string, expect: string][] = [
  ['the same text', 'a\nb', 'a\nb', ' a| b'],
  ['a line changed', 'a\nb\nc', 'a\nB\nc', ' a|-b|+B| c'],
  ['a line added at the end', 'a', 'a\nb', ' a|+b'],
  ['a line removed at the start', 'a\nb', 'b', '-a| b'],
  ['from nothing (a resource added)', '', 'a\nb', '+a|+b'],
  ['to nothing (a resource removed)', 'a', '', '-a'],
  ['moved lines keep the longest common run', 'x\na\nb\nc', 'a\nb\nc\nx', '-x| a| b| c|+x'],
];

for (const [name, before, after, expect] of CASES)
  test(`line diff: ${name}`, () => {
    assert.is(show(before, after), expect);
  });

test('line diff: a long text is cut, and says so', () => {
  const long = Array.from({ length: MAX_LINES + 10 }, (_, i) => `line ${i}`).join('\n');
  const d = lineDiff(long, `${long}\nmore`);
  assert.ok(d.cut);
  assert.is(d.lines.length, MAX_LINES);
  assert.not.ok(lineDiff('a', 'b').cut);
});

test.run();
