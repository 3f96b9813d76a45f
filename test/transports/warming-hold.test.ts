/**
 * The warming hold (src/transports/warming-hold.ts), one table row per rule: each row runs steps
 * against a fresh hold with a 100 ms limit and checks, after every step, whether it waits, which
 * kinds it holds and how it was released.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WarmingHold, type HoldOutcome } from '../../src/transports/warming-hold.ts';

const LIMIT_MS = 100;

type Step = { await: string[]; delivered: string[] } | { progress: string[] } | { sleep: number } | { stop: true };

interface Row {
  rule: string;
  steps: Step[];
  /** After the last step. */
  active: boolean;
  released: HoldOutcome[];
}

const ROWS: Row[] = [
  { rule: 'no cluster introduced: no wait', steps: [{ await: [], delivered: [] }], active: false, released: [] },
  {
    rule: 'introduced clusters whose endpoints went out already: no wait',
    steps: [{ await: ['a', 'b'], delivered: ['a', 'b'] }],
    active: false,
    released: [],
  },
  {
    rule: 'an introduced cluster without its endpoints: wait',
    steps: [{ await: ['a', 'b'], delivered: ['a'] }],
    active: true,
    released: [],
  },
  {
    rule: 'endpoints of some awaited clusters: still waiting',
    steps: [{ await: ['a', 'b'], delivered: [] }, { progress: ['a'] }],
    active: true,
    released: [],
  },
  {
    rule: 'endpoints of every awaited cluster: released once, as delivered',
    steps: [
      { await: ['a', 'b'], delivered: [] },
      { progress: ['a'] },
      { progress: ['a', 'b'] },
      { progress: ['a', 'b'] },
    ],
    active: false,
    released: ['delivered'],
  },
  {
    rule: 'the limit passes: released as expired',
    steps: [{ await: ['a'], delivered: [] }, { sleep: LIMIT_MS + 40 }],
    active: false,
    released: ['expired'],
  },
  {
    rule: 'a second push during the wait adds its clusters and keeps the first deadline',
    steps: [
      { await: ['a'], delivered: [] },
      { sleep: LIMIT_MS / 2 },
      { await: ['b'], delivered: [] },
      { sleep: LIMIT_MS / 2 + 25 },
    ],
    active: false,
    released: ['expired'],
  },
  {
    rule: 'a second push waits for the first push’s clusters too',
    steps: [
      { await: ['a'], delivered: [] },
      { await: ['b'], delivered: ['b'] },
    ],
    active: true,
    released: [],
  },
  {
    rule: 'a second push that finds everything delivered ends the wait without a release (it continues itself)',
    steps: [{ await: ['a'], delivered: [] }, { await: ['b'], delivered: ['a', 'b'] }, { sleep: LIMIT_MS + 20 }],
    active: false,
    released: [],
  },
  {
    rule: 'progress with no wait running does nothing',
    steps: [{ progress: ['a'] }],
    active: false,
    released: [],
  },
  {
    rule: 'a closed stream: no release, no timer',
    steps: [{ await: ['a'], delivered: [] }, { stop: true }, { sleep: LIMIT_MS + 20 }],
    active: false,
    released: [],
  },
];

for (const row of ROWS) {
  test(row.rule, async () => {
    const released: HoldOutcome[] = [];
    /** The clusters whose endpoints the stream has sent, as of the step. */
    let delivered: string[] = [];
    const hold = new WarmingHold(
      LIMIT_MS,
      (c) => delivered.includes(c),
      (o) => released.push(o),
    );
    for (const step of row.steps) {
      if ('await' in step) {
        delivered = step.delivered;
        const waiting = hold.await(step.await);
        assert.is(waiting, hold.active, 'await reports whether it waits');
      } else if ('progress' in step) {
        delivered = step.progress;
        hold.progress();
      } else if ('sleep' in step) await new Promise((r) => setTimeout(r, step.sleep));
      else hold.stop();
    }
    assert.is(hold.active, row.active, 'waiting');
    assert.equal(released, row.released, 'releases');
    // Only what would name a warming cluster waits; what warming needs never does.
    assert.equal(
      (['cluster', 'listener', 'route', 'endpoint', 'secret'] as const).map((k) => hold.holds(k)),
      [row.active, row.active, row.active, false, false],
    );
  });
}

test.run();
