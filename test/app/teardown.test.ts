import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Teardown } from '../../src/app/teardown.ts';

const CASES: { name: string; steps: [kind: 'stop' | 'close', what: string][]; fail?: string; order: string[] }[] = [
  { name: 'nothing set up', steps: [], order: [] },
  {
    name: 'closes newest first',
    steps: [
      ['close', 'database'],
      ['close', 'grpc'],
      ['close', 'admin'],
    ],
    order: ['admin', 'grpc', 'database'],
  },
  {
    name: 'stops before any close',
    steps: [
      ['close', 'database'],
      ['stop', 'sweep'],
      ['close', 'grpc'],
      ['stop', 'retry'],
    ],
    order: ['retry', 'sweep', 'grpc', 'database'],
  },
  {
    name: 'a failing step is logged and the rest still run',
    steps: [
      ['close', 'database'],
      ['close', 'grpc'],
      ['close', 'admin'],
    ],
    fail: 'grpc',
    order: ['admin', 'grpc', 'database'],
  },
];

for (const c of CASES) {
  test(`teardown: ${c.name}`, async () => {
    const ran: string[] = [];
    const lines: string[] = [];
    const teardown = new Teardown();
    for (const [kind, what] of c.steps) {
      const undo = async () => {
        ran.push(what);
        if (what === c.fail) throw new Error(`${what} broke`);
      };
      if (kind === 'stop') teardown.stopFirst(what, undo);
      else teardown.defer(what, undo);
    }
    await teardown.run(pino({ level: 'error' }, { write: (l: string) => void lines.push(l) }));
    assert.equal(ran, c.order);
    assert.is(lines.length, c.fail ? 1 : 0);
    if (c.fail) assert.match(lines[0]!, `shutting down: ${c.fail} failed`);
    // Run once: a second run undoes nothing again.
    await teardown.run(pino({ level: 'silent' }));
    assert.equal(ran, c.order);
  });
}

test.run();
