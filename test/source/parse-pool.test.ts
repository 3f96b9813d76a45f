/**
 * Parsing on worker threads (src/source/parse-pool.ts): a large batch is split between the main
 * thread and workers, and what comes back is exactly what parsing here gives, in order, with its
 * diagnostics; a worker that cannot run leaves its share to the main thread. Small batches never
 * start a worker.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256Hex } from '../../src/shared/hash.ts';
import { PARALLEL_MIN_BYTES, parseBatch } from '../../src/source/parse-pool.ts';
import { parseYamlFile } from '../../src/source/parse-yaml.ts';

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
  assert.ok(batch.reduce((a, j) => a + j.text.length, 0) > PARALLEL_MIN_BYTES);
  const stats = { inWorkers: 0, fellBack: 0 };
  const parsed = await parseBatch(batch, { threads: 3, stats });
  assert.equal(stats, { inWorkers: 2, fellBack: 0 });
  assert.equal(
    parsed,
    batch.map((j) => parseYamlFile(j.file, j.text, j.hash)),
  );
  assert.ok(parsed[3]!.diagnostics.length > 0, 'the broken file keeps its diagnostics');
});

test('a small batch stays on the main thread; a worker that cannot start leaves its share here', async () => {
  const small = jobs(4, 5);
  const stats = { inWorkers: 0, fellBack: 0 };
  await parseBatch(small, { threads: 4, stats });
  assert.equal(stats, { inWorkers: 0, fellBack: 0 });
  const batch = jobs(6, 700);
  const parsed = await parseBatch(batch, {
    threads: 2,
    stats,
    workerUrl: new URL('./no-such-worker.js', import.meta.url),
  });
  assert.equal(stats, { inWorkers: 0, fellBack: 1 });
  assert.equal(
    parsed.map((p) => p.documents.length),
    batch.map(() => 700),
  );
});

test.run();
