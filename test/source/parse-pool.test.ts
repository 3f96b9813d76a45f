/**
 * Parsing on worker threads (src/source/parse-pool.ts): the files of a large batch are taken from
 * one queue by the main thread and the workers, and what comes back is exactly what parsing here
 * gives, in order, with its diagnostics; a worker that cannot run leaves its files to the main
 * thread, whether it fails at once or before anyone uses it. Small batches never start a worker.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ParsedFile } from '../../src/model/sources.ts';
import { sha256Hex } from '../../src/shared/hash.ts';
import { PARALLEL_MIN_WORK, parseBatch, parseWork, ParseWorkers } from '../../src/source/parse-pool.ts';
import { parseYamlFile } from '../../src/source/parse-yaml.ts';
import { DEFAULT_LIMITS, readTree } from '../../src/source/read-tree.ts';
import { SourceCache } from '../../src/source/source-cache.ts';

/** The batches here are far below PARALLEL_MIN_WORK (megabytes): the tests lower it. */
const MIN_WORK = 256 * 1024;

function jobs(files: number, servicesPerFile: number) {
  return Array.from({ length: files }, (_, f) => {
    const docs = Array.from(
      { length: servicesPerFile },
      (_, i) => `kind: Service\nname: svc-${f}-${i}\nendpoints: [{ address: 10.0.${f}.${i % 250}:80 }]\n`,
    );
    // One broken file: its diagnostics must come back from whichever thread parsed it.
    const text = f === 3 ? `${docs.join('---\n')}---\nkind: [unclosed\n` : docs.join('---\n');
    return { file: `f-${f}.yaml`, text, hash: sha256Hex(text) };
  });
}

test('a large batch is parsed by workers and the main thread alike, as parsing here would', async () => {
  const batch = jobs(12, 500);
  const stats = { inWorkers: 0, workers: 0, fellBack: 0 };
  const parsed = await parseBatch(batch, { threads: 3, stats, minWork: MIN_WORK });
  assert.is(stats.workers, 2, 'both workers took files');
  assert.ok(stats.inWorkers >= 2 && stats.inWorkers < batch.length, `${stats.inWorkers} of ${batch.length} in workers`);
  assert.is(stats.fellBack, 0);
  assert.equal(
    parsed,
    batch.map((j) => parseYamlFile(j.file, j.text, j.hash)),
  );
  assert.ok(parsed[3]!.diagnostics.length > 0, 'the broken file keeps its diagnostics');
});

test('a small batch stays on the main thread; a worker that cannot start leaves its share here', async () => {
  const small = jobs(4, 5);
  const stats = { inWorkers: 0, workers: 0, fellBack: 0 };
  await parseBatch(small, { threads: 4, stats, minWork: MIN_WORK });
  assert.equal(stats, { inWorkers: 0, workers: 0, fellBack: 0 });
  const batch = jobs(6, 700);
  const parsed = await parseBatch(batch, {
    threads: 2,
    stats,
    minWork: MIN_WORK,
    workerUrl: new URL('./no-such-worker.js', import.meta.url),
  });
  assert.equal(stats, { inWorkers: 0, workers: 0, fellBack: 1 });
  assert.equal(
    parsed.map((p) => p.documents.length),
    batch.map(() => 700),
  );
});

test('workers started before the batch: used when it is large, closed when small, failed ones not waited for', async () => {
  const batch = jobs(12, 500);
  const stats = { inWorkers: 0, workers: 0, fellBack: 0 };
  const early = ParseWorkers.start({ threads: 2 });
  const parsed = await parseBatch(batch, { workers: early, stats, minWork: MIN_WORK });
  assert.is(stats.workers, 1);
  assert.equal(
    parsed,
    batch.map((j) => parseYamlFile(j.file, j.text, j.hash)),
  );
  const unused = ParseWorkers.start({ threads: 2 });
  const ended = unused.workers.map((w) => new Promise((r) => w.worker.once('exit', r)));
  await parseBatch(jobs(2, 5), { workers: unused, stats, minWork: MIN_WORK });
  await Promise.all(ended);
  // A worker that failed long before the batch (nothing listened then): its files are parsed here.
  const broken = ParseWorkers.start({ threads: 2, workerUrl: new URL('./no-such-worker.js', import.meta.url) });
  await Promise.all(broken.workers.map((w) => w.ended));
  const again = await parseBatch(batch, { workers: broken, stats, minWork: MIN_WORK });
  assert.is(stats.fellBack, 1);
  assert.equal(again, parsed);
});

test('a large tree read from disk is parsed on every core, as parsing here would', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetxds-pool-'));
  try {
    const batch = jobs(12, 500);
    for (const j of batch) writeFileSync(join(dir, j.file), j.text);
    const stats = { inWorkers: 0, workers: 0, fellBack: 0 };
    const cache = new SourceCache();
    const read = await readTree(dir, DEFAULT_LIMITS, { cache, parseStats: stats, parallelMinWork: MIN_WORK });
    assert.is(stats.workers, Math.min(1, availableParallelism() - 1));
    const byFile = (files: readonly ParsedFile[]) => [...files].sort((a, b) => (a.file < b.file ? -1 : 1));
    const expected = byFile(batch.map((j) => parseYamlFile(j.file, j.text, j.hash)));
    // Compared as text: a failure would print 3 MB of documents otherwise.
    assert.ok(JSON.stringify(byFile(read.files)) === JSON.stringify(expected), 'the parses differ from parsing here');
    // Read again with nothing changed: nothing to parse, no worker.
    const again = { inWorkers: 0, workers: 0, fellBack: 0 };
    await readTree(dir, DEFAULT_LIMITS, { cache, parseStats: again, parallelMinWork: MIN_WORK });
    assert.equal(again, { inWorkers: 0, workers: 0, fellBack: 0 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('parse work: a file that may need yaml counts more, and the default needs a tree of megabytes', async () => {
  const plain = 'kind: Service\nname: a\n';
  const anchored = 'kind: Service\nname: &n a\nalias: *n\n';
  assert.is(parseWork(plain), plain.length);
  assert.is(parseWork(Buffer.from(plain)), plain.length);
  assert.ok(parseWork(anchored) >= 8 * anchored.length);
  assert.is(parseWork(Buffer.from(anchored)), parseWork(anchored));
  assert.ok(PARALLEL_MIN_WORK >= 4 * 1024 * 1024);
  const stats = { inWorkers: 0, workers: 0, fellBack: 0 };
  const batch = jobs(12, 500);
  assert.ok(batch.reduce((a, j) => a + parseWork(j.text), 0) < PARALLEL_MIN_WORK);
  await parseBatch(batch, { threads: 2, stats });
  assert.is(stats.workers, 0);
  // The reader weighed each file while reading it: its weight is taken as given, not scanned again.
  const weighed = { inWorkers: 0, workers: 0, fellBack: 0 };
  await parseBatch(
    batch.map((j) => ({ ...j, work: PARALLEL_MIN_WORK })),
    { threads: 2, stats: weighed },
  );
  assert.is(weighed.workers, 1);
});

test.run();
