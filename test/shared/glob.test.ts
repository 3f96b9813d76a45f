/**
 * Globs on client-chosen strings: a table of verdicts (checked against the obvious regex
 * translation on every row), and hostile inputs that a backtracking matcher takes seconds on.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileGlob } from '../../src/shared/glob.ts';
import { NodeGroupResolver } from '../../src/model/node-groups.ts';
import { compilePlan } from '../../src/rollout/plan.ts';

const ROWS: [glob: string, input: string, matches: boolean][] = [
  ['edge-1', 'edge-1', true],
  ['edge-1', 'edge-10', false],
  ['edge-?', 'edge-7', true],
  ['edge-?', 'edge-', false],
  ['edge-*', 'edge-', true],
  ['edge-*', 'edge-canary-3', true],
  ['*', '', true],
  ['**', 'abc', true],
  ['*-prod', 'a-b-prod', true],
  ['*-prod', 'prod', false],
  ['a*b*c', 'abc', true],
  ['a*b*c', 'acb', false],
  ['a*b*c', 'axxbyyc', true],
  ['a*b*c', 'axxbyycd', false],
  ['*ab*ab*', 'abab', true],
  ['*ab*ab*', 'aba', false],
  ['*a?c*', 'xxabcxx', true],
  ['*a?c*', 'xxacxx', false],
  ['a*a', 'a', false],
  ['a*a', 'aa', true],
  ['?*?', 'a', false],
  ['?*?', 'ab', true],
  ['x.', 'xy', false],
  ['x.', 'x.', true],
  ['(a+)+$', '(a+)+$', true],
  ['*-*-*-*-prod', 'eu-1-a-b-prod', true],
];

test('glob verdicts agree with the anchored regex translation', () => {
  for (const [glob, input, expected] of ROWS) {
    const regex = new RegExp(
      `^${glob
        .replace(/[.+^${}()|[\]\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')}$`,
    );
    assert.is(regex.test(input), expected, `row itself: ${glob} ~ ${input}`);
    assert.is(compileGlob(glob).test(input), expected, `${glob} ~ ${JSON.stringify(input)}`);
  }
});

// A regex translation of `*-*-*-*-prod` takes seconds on 512 dashes; the matcher's work is bounded
// by input length times pattern length. The bound here is generous (a backtracking matcher misses it
// by two orders of magnitude) and guards against a return to regexes.
const HOSTILE: [glob: string, input: string][] = [
  ['*-*-*-*-prod', '-'.repeat(512)],
  ['*a*a*a*a*a*a*b', 'a'.repeat(4096)],
  ['*?*?*?*?*?*?*x', 'y'.repeat(4096)],
];

test('hostile inputs are refused in bounded time', () => {
  for (const [glob, input] of HOSTILE) {
    const g = compileGlob(glob);
    const t0 = performance.now();
    assert.is(g.test(input), false);
    const ms = performance.now() - t0;
    assert.ok(ms < 50, `${glob} on ${input.length} characters took ${ms.toFixed(1)} ms`);
  }
});

test('node groups and rollout stages match client ids through the linear matcher', () => {
  const resolver = new NodeGroupResolver([{ kind: 'NodeGroup', name: 'prod', match: { idPattern: '*-*-*-*-prod' } }]);
  const t0 = performance.now();
  assert.is(resolver.resolve({ id: '-'.repeat(512), cluster: '', metadata: {} }), 'default');
  assert.is(resolver.resolve({ id: 'a-b-c-d-prod', cluster: '', metadata: {} }), 'prod');
  const plan = compilePlan({
    kind: 'Rollout',
    name: 'r',
    stages: [{ name: 'canary', select: { idPattern: '*-*-*-*-canary' } }],
  });
  const stage = plan.stages[0]!;
  assert.is(stage.selects({ id: '-'.repeat(512), cluster: '', metadata: {} }, 'default'), false);
  assert.ok(performance.now() - t0 < 100);
});

test.run();
