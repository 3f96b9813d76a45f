/** The rollout state machine, one row per transition, and which stages each state serves the new version. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  servesNew,
  startRollout,
  step,
  type RolloutEvent,
  type RolloutState,
  type StageRules,
} from '../../src/rollout/state.ts';

const T0 = new Date('2026-11-23T10:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);

/** Two explicit stages (canary soaks 60 s, then "fleet" is manual) and the implicit "rest". */
const RULES: StageRules = {
  count: 2,
  soakMs: (i) => (i === 0 ? 60_000 : 0),
  manual: (i) => i === 1,
  onNack: 'halt',
};

type Timed = [number, RolloutEvent];
interface Row {
  name: string;
  events: Timed[];
  rules?: Partial<StageRules>;
  status: RolloutState['status'];
  stage: number;
  /** Which of stages 0, 1, rest are served the new version. */
  serves: [boolean, boolean, boolean];
  error?: RegExp;
}

const nack: RolloutEvent = { type: 'nack', nodeStage: 0, nodeId: 'c1', typeUrl: 'cds', message: 'bad' };
const ROWS: Row[] = [
  {
    name: 'a new rollout serves the first stage only',
    events: [],
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'ACKs alone do not pass a soaking stage',
    events: [
      [1, { type: 'gates', acked: true }],
      [30, { type: 'gates', acked: true }],
    ],
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'ACKs held for the soak pass the stage',
    events: [
      [1, { type: 'gates', acked: true }],
      [61, { type: 'gates', acked: true }],
    ],
    status: 'progressing',
    stage: 1,
    serves: [true, true, false],
  },
  {
    name: 'a gap in the ACKs restarts the soak',
    events: [
      [1, { type: 'gates', acked: true }],
      [30, { type: 'gates', acked: false }],
      [62, { type: 'gates', acked: true }],
      [100, { type: 'gates', acked: true }],
    ],
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'a manual stage waits for promote however long its gates hold',
    events: [
      [1, { type: 'gates', acked: true }],
      [61, { type: 'gates', acked: true }],
      [500, { type: 'gates', acked: true }],
    ],
    status: 'progressing',
    stage: 1,
    serves: [true, true, false],
  },
  {
    name: 'promote on the last explicit stage completes: everyone',
    events: [
      [1, { type: 'promote' }],
      [2, { type: 'promote' }],
    ],
    status: 'complete',
    stage: 2,
    serves: [true, true, true],
  },
  {
    name: 'a NACK from the new version halts; the stage keeps it (onNack halt)',
    events: [[5, nack]],
    status: 'halted',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'onNack rollback returns the stage to the previous version',
    events: [[5, nack]],
    rules: { onNack: 'rollback' },
    status: 'halted',
    stage: 0,
    serves: [false, false, false],
  },
  {
    name: 'a NACK from a proxy still on the old version does not halt',
    events: [[5, { ...nack, nodeStage: 1 }]],
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'halted gates do not advance',
    events: [
      [5, nack],
      [6, { type: 'gates', acked: true }],
      [100, { type: 'gates', acked: true }],
    ],
    status: 'halted',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'resume after a rollback-halt serves the stage again',
    events: [
      [5, nack],
      [9, { type: 'resume' }],
    ],
    rules: { onNack: 'rollback' },
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'manual halt, then resume',
    events: [
      [5, { type: 'halt' }],
      [9, { type: 'resume' }],
    ],
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
  },
  {
    name: 'abort: nobody on the new version',
    events: [[5, { type: 'abort' }]],
    status: 'aborted',
    stage: 0,
    serves: [false, false, false],
  },
  {
    name: 'abort of a halted rollout',
    events: [
      [5, nack],
      [6, { type: 'abort' }],
    ],
    status: 'aborted',
    stage: 0,
    serves: [false, false, false],
  },
  {
    name: 'promote of a halted rollout is refused',
    events: [
      [5, nack],
      [6, { type: 'promote' }],
    ],
    status: 'halted',
    stage: 0,
    serves: [true, false, false],
    error: /halted rollout cannot be promoted/,
  },
  {
    name: 'resume of a progressing rollout is refused',
    events: [[5, { type: 'resume' }]],
    status: 'progressing',
    stage: 0,
    serves: [true, false, false],
    error: /cannot be resumed/,
  },
  {
    name: 'a complete rollout cannot be aborted',
    events: [
      [1, { type: 'promote' }],
      [2, { type: 'promote' }],
      [3, { type: 'abort' }],
    ],
    status: 'complete',
    stage: 2,
    serves: [true, true, true],
    error: /complete rollout cannot be aborted/,
  },
];

for (const row of ROWS) {
  test(row.name, () => {
    const rules = { ...RULES, ...row.rules };
    let s = startRollout(41, 42, T0);
    let error: Error | undefined;
    for (const [sec, e] of row.events) {
      try {
        s = step(s, e, rules, at(sec));
      } catch (err) {
        error = err as Error;
      }
    }
    if (row.error) assert.match(error?.message ?? '(no error)', row.error);
    else assert.is(error, undefined);
    assert.is(s.status, row.status, 'status');
    assert.is(s.stage, row.stage, 'stage');
    assert.equal(
      [0, 1, 2].map((i) => servesNew(s, i)),
      row.serves,
      'served the new version',
    );
  });
}

test('a state that does not change is the same object (nothing to save or publish)', () => {
  const s = startRollout(1, 2, T0);
  assert.is(step(s, { type: 'gates', acked: false }, RULES, at(1)), s);
  const acked = step(s, { type: 'gates', acked: true }, RULES, at(1));
  assert.is(step(acked, { type: 'gates', acked: true }, RULES, at(2)), acked);
});

test.run();
