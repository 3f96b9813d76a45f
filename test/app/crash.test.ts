/**
 * Durability: the server is SIGKILLed at random moments while it applies changes. After every
 * restart it serves exactly one of the committed versions (the newest), every committed version
 * is complete (its manifest and resources are there: never a mix), and integrity_check is ok.
 */
import Database from 'better-sqlite3';
import { RevisionStore } from '../../src/store/revisions.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnServer } from '../helpers/process.ts';
import { random } from '../helpers/random.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

test('killed during applies, again and again: restarts serve a committed version; the database is intact', async () => {
  const dir = writeTree(BASE);
  const db = join(tempDir(), 'state.db');
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${dir}\ndatabase: ${db}\ngrpc: { listen: 127.0.0.1:0 }\nadmin: { listen: 127.0.0.1:0 }\nwatch: { ` +
      `debounceMs: 5, maxWaitMs: 20 }\nlog: { level: info }\n`,
  );
  // The kill times come from a seed, printed: a failing run is replayed with FLEETXDS_CRASH_SEED.
  const seed = Number(process.env.FLEETXDS_CRASH_SEED) || Math.floor(Math.random() * 2 ** 31);
  const next = random(seed);
  const killAfterMs = Array.from({ length: 8 }, () => Math.floor(next() * 120));
  console.log(`  crash seed ${seed}: kills ${killAfterMs.join(', ')} ms into each burst`);
  for (let i = 0; i < 8; i++) {
    const server = await spawnServer(settings);
    const served = await server.admin('/api/v1/config');
    const check = new Database(db, { readonly: true });
    try {
      const newest = check.prepare('SELECT id, model_hash FROM config_versions ORDER BY id DESC LIMIT 1').get() as {
        id: number;
        model_hash: string;
      };
      assert.is(served.versionId, newest.id, 'serves the newest committed version');
      assert.is(served.modelHash, newest.model_hash);
    } finally {
      check.close();
    }
    // Start a burst of changes and kill the process somewhere in the middle of applying them.
    for (let k = 0; k < 5; k++)
      writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.replace('10.0.1.1:80', `10.0.${i}.${k + 2}:80`));
    await new Promise((r) => setTimeout(r, killAfterMs[i]));
    await server.stop('SIGKILL');
    const after = new Database(db, { readonly: true });
    try {
      assert.is(after.pragma('integrity_check', { simple: true }), 'ok');
      const orphans = after
        .prepare(
          'SELECT count(*) AS n FROM config_versions v LEFT JOIN version_manifests m ON m.version_id = v.id ' +
            'WHERE m.version_id IS NULL',
        )
        .get() as { n: number };
      assert.is(orphans.n, 0, 'every committed version has its manifest');
      // Every committed version reads back whole: its model chunks, its manifest and every resource it names.
      const store = new RevisionStore(after);
      for (const v of store.list(1000)) {
        assert.ok(store.get(v.id)?.model, `version ${v.id}: its model is stored`);
        const manifest = store.manifest(v.id);
        assert.ok(manifest, `version ${v.id}: its manifest and resource types are stored`);
        assert.ok(
          store.resources(Object.values(manifest).flat()),
          `version ${v.id}: every resource it names is stored`,
        );
      }
    } finally {
      after.close();
    }
  }
  // Changes did get applied between kills (so kills landed around applies, not on an idle server).
  const final = new Database(db, { readonly: true });
  const n = (final.prepare('SELECT count(*) AS n FROM config_versions').get() as { n: number }).n;
  final.close();
  assert.ok(n >= 3, `versions applied across the kills: ${n}`);
});

test.run();
