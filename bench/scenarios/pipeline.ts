/**
 * Pipeline cost for a tree of N services (N routes): read + parse, validate, translate + encode
 * (cold), then, with the server running and watching, a one-file change: time from the file write
 * to the new snapshot being published (including the watcher debounce); a one-route edit (apply
 * time, after the debounce); and the first one-route push after a restart. Runs in its own
 * process so peak RSS is this scenario's alone. Prints one JSON line.
 *   argv: services, folder, and `features` for a tree whose every route and listener uses the
 *   HTTP features (affinity, header edits, retries with backoff, access log, connection settings).
 */
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startApp } from '../../src/app/app.ts';
import { validateSourceSet } from '../../src/model/validate.ts';
import { buildConfig, freshBuildCaches } from '../../src/snapshot/build.ts';
import { readTree } from '../../src/source/read-tree.ts';
import { generateTree, serviceYaml, vhostYaml } from '../lib/generate.ts';

const n = Number(process.argv[2] ?? 1000);
const root = process.argv[3];
/** `features`: every route, listener and service uses the HTTP features (generate.ts). */
const features = process.argv[4] === 'features';
const cfg = join(root!, 'cfg');
generateTree(cfg, { services: n, routesPerVhost: 100, features });

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
const start = () =>
  startApp(
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
const app = await start();
const changes: number[] = [];
const applies: number[] = [];
/** Apply time (from the debounced event to the publish) of each applied change. */
let lastApplyMs = 0;
const watchApplies = (a: typeof app) => a.pipeline.events.on('applied', (ms: number) => (lastApplyMs = ms));
watchApplies(app);
const published = (a: typeof app) =>
  new Promise<number>((resolve) => {
    const off = a.cache.onPublish(() => {
      off();
      resolve(performance.now());
    });
  });
/** One route of the first virtual host file gets a new prefix: what an operator's one-route push is. */
const editRoute = (k: number) =>
  writeFileSync(
    join(cfg, 'routes', 'vh-0.yaml'),
    vhostYaml(0, 100, n, '', features).replace('prefix: /api/r0/', `prefix: /api/r0-edit${k}/`),
  );
// What a one-file change adds to the database (after a checkpoint, so the WAL is in the file).
const dbBytes = () => (app.stores.checkpoint(), statSync(database).size);
const bytesBefore = dbBytes();
for (let k = 0; k < 5; k++) {
  const done = published(app);
  const before = app.pipeline.caches.encoder.stats.encoded;
  const w = performance.now();
  writeFileSync(
    join(cfg, 'services', 'svc-0.yaml'),
    Array.from({ length: Math.min(100, n) }, (_, i) => serviceYaml(i, i === 0 ? k + 1 : 0, features)).join('---\n'),
  );
  const p = await done;
  changes.push(p - w);
  applies.push(app.pipeline.caches.encoder.stats.encoded - before);
}
const storedPerChange = (dbBytes() - bytesBefore) / changes.length;
const routeEdits: number[] = [];
for (let k = 0; k < 7; k++) {
  const done = published(app);
  editRoute(k);
  await done;
  routeEdits.push(lastApplyMs);
}
await app.close();
// A restart on the same database and tree, then a one-route push: parses come from the store.
const restarted = await start();
watchApplies(restarted);
const afterRestart = published(restarted);
editRoute(100);
await afterRestart;
const firstPushAfterRestartMs = lastApplyMs;
const parsedAfterRestart = restarted.pipeline.caches.source.stats.parsed;
await restarted.close();
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
    oneRouteApplyMs: Math.round(med(routeEdits)!),
    firstPushAfterRestartMs: Math.round(firstPushAfterRestartMs),
    filesParsedAfterRestart: parsedAfterRestart,
    encodedPerChange: med(applies),
    storedKBPerChange: Math.round(storedPerChange / 1024),
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
    database,
    configDir: cfg,
  }),
);
process.exit(0);
