/**
 * Pipeline cost for a tree of N services (N routes): read + parse, validate, translate + encode
 * (cold), then, with the server running and watching, a one-file change: time from the file write
 * to the new snapshot being published (including the watcher debounce). Runs in its own process
 * so peak RSS is this scenario's alone. Prints one JSON line.
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startApp } from '../../src/app/app.ts';
import { validateSourceSet } from '../../src/model/validate.ts';
import { buildConfig, freshBuildCaches } from '../../src/snapshot/build.ts';
import { readTree } from '../../src/source/read-tree.ts';
import { generateTree, serviceYaml } from '../lib/generate.ts';

const n = Number(process.argv[2] ?? 1000);
const root = process.argv[3];
const cfg = join(root!, 'cfg');
generateTree(cfg, { services: n, routesPerVhost: 100 });

const t0 = performance.now();
const source = await readTree(cfg);
const t1 = performance.now();
const validated = validateSourceSet(source);
const t2 = performance.now();
if (!validated.model) throw new Error(`generated tree invalid: ${JSON.stringify(validated.diagnostics.slice(0, 3))}`);
const built = buildConfig(validated.model, freshBuildCaches());
const t3 = performance.now();
if (!built.config) throw new Error('build failed');
const resources = [...built.config.groups.values()].reduce(
  (a, g) => a + Object.values(g.types).reduce((b, t) => b + t.resources.size, 0),
  0,
);

const database = join(root!, 'state.db');
const app = await startApp(
  {
    configDir: cfg,
    database,
    grpc: { listen: '127.0.0.1:0' },
    admin: { listen: '127.0.0.1:0' },
    watch: { enabled: true, debounceMs: 50, maxWaitMs: 500 },
    log: { level: 'silent' },
  },
  pino({ level: 'silent' }),
);
const changes: number[] = [];
const applies: number[] = [];
// What a one-file change adds to the database (after a checkpoint, so the WAL is in the file).
const dbBytes = () => (app.stores.checkpoint(), statSync(database).size);
const bytesBefore = dbBytes();
for (let k = 0; k < 5; k++) {
  const published = new Promise<number>((resolve) => {
    const off = app.cache.onPublish(() => {
      off();
      resolve(performance.now());
    });
  });
  const before = app.pipeline.caches.encoder.stats.encoded;
  const w = performance.now();
  writeFileSync(
    join(cfg, 'services', 'svc-0.yaml'),
    Array.from({ length: Math.min(100, n) }, (_, i) => serviceYaml(i, i === 0 ? k + 1 : 0)).join('---\n'),
  );
  const p = await published;
  changes.push(p - w);
  applies.push(app.pipeline.caches.encoder.stats.encoded - before);
}
const storedPerChange = (dbBytes() - bytesBefore) / changes.length;
await app.close();
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  JSON.stringify({
    services: n,
    files: source.files.length,
    resources,
    parseMs: Math.round(t1 - t0),
    validateMs: Math.round(t2 - t1),
    translateEncodeMs: Math.round(t3 - t2),
    coldTotalMs: Math.round(t3 - t0),
    oneFileChangeMs: Math.round(med(changes)!),
    debounceMs: 50,
    encodedPerChange: med(applies),
    storedKBPerChange: Math.round(storedPerChange / 1024),
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    database,
    configDir: cfg,
  }),
);
process.exit(0);
