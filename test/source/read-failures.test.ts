/**
 * A read of the config tree that fails for a reason that passes (here: the process out of file
 * descriptors, as a server holding thousands of connections can be) says nothing about the tree:
 * it is not rejected, nothing is recorded against it, the last good version stays served, and the
 * tree is read again within seconds (src/app/read-retry.ts) rather than at the next change or the
 * watcher's minute. Errors that do describe the tree (its directory missing) are still verdicts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ApplyOutcome } from '../../src/app/pipeline.ts';
import { ReadRetry } from '../../src/app/read-retry.ts';
import { passingReadError, readTree } from '../../src/source/read-tree.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

/** This process's open-file limits, as /proc reports them. */
function fileLimits(): { soft: string; hard: string } {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'))!;
  const [soft, hard] = line.replace('Max open files', '').trim().split(/\s+/);
  return { soft: soft!, hard: hard! };
}

/**
 * Runs `fn` with no file descriptor to be had: the process's limit is lowered to 3, below every
 * descriptor it holds but stdin, stdout and stderr, so whatever it closes meanwhile (tsx closes a
 * socket at some point) cannot be reused. The limit is put back by a child started beforehand:
 * starting one afterwards would itself need descriptors.
 */
async function withoutFileDescriptors<T>(fn: () => Promise<T>): Promise<T> {
  const { soft, hard } = fileLimits();
  const restorer = spawn('sh', ['-c', `read x; exec prlimit --pid ${process.pid} --nofile=${soft}:${hard}`], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  const restored = new Promise<number | null>((r) => restorer.once('exit', r));
  const lowered = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=3:${hard}`], { encoding: 'utf8' });
  if (lowered.status !== 0) {
    restorer.kill();
    throw new Error(`prlimit failed (util-linux is needed): ${lowered.stderr ?? lowered.error}`);
  }
  try {
    assert.throws(() => openSync('/dev/null', 'r'), /EMFILE/);
    return await fn();
  } finally {
    restorer.stdin.end('go\n');
    assert.is(await restored, 0, 'the limit was put back');
    assert.is(fileLimits().soft, soft);
  }
}

test('which read errors pass (read again) and which are about the tree', () => {
  const cases: [code: string | undefined, passes: boolean][] = [
    ['EMFILE', true],
    ['ENFILE', true],
    ['EAGAIN', true],
    ['EIO', true],
    ['ESTALE', true],
    ['ENOENT', true], // a file listed, then gone when read: a checkout under way
    ['EACCES', false],
    ['EPERM', false],
    ['EISDIR', false],
    ['ELOOP', false],
    [undefined, false],
  ];
  for (const [code, passes] of cases)
    assert.is(passingReadError(Object.assign(new Error('x'), { code })), passes, String(code));
});

test('a tree read without file descriptors is incomplete; a missing directory is not', async () => {
  const dir = writeTree(BASE);
  const starved = await withoutFileDescriptors(() => readTree(dir));
  assert.match(starved.incomplete ?? '', /EMFILE/);
  assert.equal(starved.files, [], 'nothing of a partial read is handed on');
  assert.is(starved.diagnostics[0]?.code, 'FXDS_FILE_UNREADABLE', 'the reason is still a diagnostic');
  const read = await readTree(dir);
  assert.is(read.incomplete, undefined);
  assert.is(read.files.length, Object.keys(BASE).length);
  const missing = await readTree(join(tempDir(), 'not-there'));
  assert.is(missing.incomplete, undefined, 'a missing directory is the state of the tree');
  assert.is(missing.diagnostics[0]?.code, 'FXDS_FILE_UNREADABLE');
});

test('an unreadable tree is not rejected: the version served stays, and the tree is read again in a second', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  try {
    const before = app.cache.current!.versionId;
    writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.replace('10.0.0.2:8080', '10.0.0.3:8080'));
    const outcome = (await withoutFileDescriptors(() => app.reload())) as ApplyOutcome;
    assert.is(outcome.status, 'unreadable');
    assert.match((outcome as { reason: string }).reason, /EMFILE/);
    assert.is(app.cache.current!.versionId, before, 'the last good version is still served');
    assert.is(app.stores.rejections.latest(), undefined, 'nothing is recorded against the tree');
    // The status API says so until a read completes (the retry's first read is a second away).
    const status = async () =>
      ((await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as Record<string, unknown>)
        .unreadableTree as { reason: string; failedReads: number; since: string; nextReadAt: string } | null;
    const shown = await status();
    assert.ok(shown, 'shown while unreadable');
    assert.match(shown.reason, /EMFILE/);
    assert.is(shown.failedReads, 1);
    assert.ok(Date.parse(shown.nextReadAt) > Date.parse(shown.since), 'the next read is due after the failure');
    // Nobody calls reload again and the watcher is off: the retry reads the tree.
    const applied = await waitFor(
      'the tree read again and applied',
      () => app.cache.current!.versionId !== before,
      5000,
    );
    assert.ok(applied);
    assert.is(await status(), null, 'gone once a read completed');
    const metrics = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
    assert.match(metrics, /^fleetxds_config_read_failures_total 1$/m);
    assert.match(metrics, /^fleetxds_validation_failures_total 0$/m);
  } finally {
    await app.close();
  }
});

test('read again after 1 s, then twice as long each time up to the cap; any complete read resets it', async () => {
  const warnings: { retryInMs: number }[] = [];
  const log = pino({ level: 'warn' }, { write: (l: string) => void warnings.push(JSON.parse(l)) });
  let reads = 0;
  const retry = new ReadRetry(() => reads++, log, 10, 40);
  const unreadable: ApplyOutcome = { status: 'unreadable', reason: 'x: EMFILE', diagnostics: [] };
  const applied: ApplyOutcome = { status: 'applied', versionId: 2, diagnostics: [] };
  const steps: [outcome: ApplyOutcome | undefined, retryInMs: number | undefined][] = [
    [unreadable, 10],
    [unreadable, 20],
    [unreadable, 40],
    [unreadable, 40],
    [applied, undefined],
    [unreadable, 10],
    [undefined, undefined], // the apply threw: not a passing read error, no retry
    [unreadable, 10],
  ];
  // Failed reads in a row, as the status shows them: counted, since the first, until one completes.
  const failedReads = [1, 2, 3, 4, undefined, 1, undefined, 1];
  let since: string | undefined;
  for (const [i, [outcome, want]] of steps.entries()) {
    const logged = warnings.length;
    retry.settled(outcome);
    assert.is(warnings.length > logged ? warnings.at(-1)!.retryInMs : undefined, want, JSON.stringify(outcome));
    const state = retry.unreadable;
    assert.is(state?.failedReads, failedReads[i], `step ${i}: failed reads`);
    if (state && state.failedReads > 1) assert.is(state.since, since, `step ${i}: since the first failure`);
    since = state?.since;
    if (state) assert.is(state.reason, 'x: EMFILE');
  }
  await new Promise((r) => setTimeout(r, 30));
  assert.is(reads, 1, 'only the last schedule stands: each settle replaces the one before');
  retry.settled(unreadable);
  retry.stop();
  await new Promise((r) => setTimeout(r, 40));
  assert.is(reads, 1, 'stopped');
});

test.run();
