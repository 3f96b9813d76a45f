/**
 * A start that fails midway (a listener's port taken) undoes what it had set up: the gRPC port is
 * free again, the database is closed, and no serving thread, timer or watcher keeps the process
 * alive (it exits by itself). Each case runs in a process of its own (test/helpers/failing-start.ts).
 */
import { spawn } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';

const CASES = [
  { taken: 'admin', error: /EADDRINUSE/ },
  { taken: 'rest', error: /EADDRINUSE/ },
] as const;

function failingStart(taken: string): Promise<{ code: number | null; out: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', projectPath('test/helpers/failing-start.ts'), taken], {
      cwd: projectPath(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // A process kept alive by something the failed start left behind is ended here and fails.
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, ms: Date.now() - t0 });
    });
  });
}

for (const c of CASES) {
  test(`a start that fails at the ${c.taken} listener leaves nothing behind`, async () => {
    const r = await failingStart(c.taken);
    assert.is(r.code, 0, `the process did not end by itself (exit ${r.code} after ${r.ms} ms):\n${r.out}`);
    const report = JSON.parse(r.out.trim().split('\n').at(-1)!) as {
      error: string;
      rebound: boolean;
      databaseOpen: boolean;
    };
    assert.match(report.error, c.error);
    assert.ok(report.rebound, 'the gRPC port is free again');
    assert.not.ok(report.databaseOpen, 'the database is closed');
  });
}

test.run();
