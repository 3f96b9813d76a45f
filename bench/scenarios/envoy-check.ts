/**
 * Cost of the optional Envoy pre-check (`envoyCheck.binaries`): the time `checkTree` takes with
 * and without real Envoy judging the result, for the bundled example config and for generated
 * trees of N services (one node group), cold and after a one-route change (only changed groups
 * are checked again). Prints one JSON line per tree.
 */
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkTree } from '../../src/compile/check-tree.ts';
import { EnvoyChecker } from '../../src/compile/envoy-check.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { generateTree, vhostYaml } from '../lib/generate.ts';

const root = process.argv[2]!;
const binaries = process.argv.slice(3);

/** Times the Envoy step alone (on an already built tree), cold and with the unchanged-group cache. */
async function measure(label: string, dir: string, change?: () => void): Promise<void> {
  let t = performance.now();
  const r = await checkTree(dir);
  const checkMs = performance.now() - t;
  if (!r.config || !r.model) throw new Error(`${label}: rejected: ${JSON.stringify(r.diagnostics.slice(0, 2))}`);
  const checker = new EnvoyChecker({ binaries });
  t = performance.now();
  const problems = await checker.check(r.model, r.config, () => undefined);
  const coldMs = performance.now() - t;
  if (problems.length) throw new Error(`${label}: Envoy rejects: ${problems[0]!.message}`);
  let changedMs: number | undefined;
  if (change) {
    change();
    const again = await checkTree(dir);
    t = performance.now();
    await checker.check(again.model!, again.config!, () => undefined);
    changedMs = performance.now() - t;
  }
  const bytes = [...r.config.groups.values()].reduce(
    (a, g) =>
      a +
      Object.values(g.types).reduce((b, ty) => b + [...ty.resources.values()].reduce((c, x) => c + x.any.length, 0), 0),
    0,
  );
  const round = (x: number | undefined) => (x === undefined ? '-' : Math.round(x));
  console.log(
    JSON.stringify({
      tree: label,
      groups: r.config.groups.size,
      resourceKB: Math.round(bytes / 1024),
      envoyReleases: binaries.length,
      checkTreeMs: round(checkMs),
      envoyCheckMs: round(coldMs),
      envoyRuns: checker.stats.runs,
      envoyAfterOneRouteChangeMs: round(changedMs),
    }),
  );
}

const example = join(root, 'example');
cpSync(projectPath('config'), example, { recursive: true });
await measure('example config', join(example, 'services'));
for (const n of [1000]) {
  const dir = join(root, `gen-${n}`);
  generateTree(dir, { services: n, routesPerVhost: 100 });
  await measure(`${n} services`, dir, () =>
    writeFileSync(join(dir, 'routes', 'vh-0.yaml'), vhostYaml(0, 100, n, 'changed')),
  );
}
