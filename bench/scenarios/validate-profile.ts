/** Where validation time goes for a generated tree of N services (diagnostic tool; prints JSON). */
import { validateSourceSet } from '../../src/model/validate.ts';
import { readTree } from '../../src/source/read-tree.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { generateTree } from '../lib/generate.ts';

const n = Number(process.argv[2] ?? 10000);
const dir = tempDir();
generateTree(dir, { services: n, routesPerVhost: 100 });
const source = await readTree(dir);
const times: number[] = [];
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  validateSourceSet(source);
  times.push(performance.now() - t);
}
console.log(JSON.stringify({ services: n, node: process.version, validateMs: times.map(Math.round) }));
