import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';

test('sources, tests and benchmarks type-check (strict)', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.check.json'], { cwd: projectPath(), encoding: 'utf8' });
  assert.is(r.status, 0, r.stdout + r.stderr);
});

test.run();
