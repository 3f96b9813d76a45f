/**
 * Prints what config trees build to, as a JSON list of digests of every served byte: per tree, per
 * group and type, the type version and each resource's version and sha256 of its Any bytes. Run as
 * its own process by the determinism test, so its builds share no memory with another process's.
 *   node --import tsx test/helpers/build-digest.ts <dir>...
 */
import { createHash } from 'node:crypto';
import { checkTree } from '../../src/compile/check-tree.ts';
import { RESOURCE_KINDS } from '../../src/xds/resource-types.ts';

const dirs = process.argv.slice(2);
if (!dirs.length) throw new Error('usage: build-digest.ts <dir>...');
const all = [];
for (const dir of dirs) {
  const r = await checkTree(dir);
  if (!r.config) {
    process.stderr.write(`${dir}: ${JSON.stringify(r.diagnostics)}\n`);
    process.exit(1);
  }
  const out: Record<string, Record<string, { version: string; resources: Record<string, string> }>> = {};
  for (const [group, g] of [...r.config.groups].sort(([a], [b]) => (a < b ? -1 : 1))) {
    out[group] = {};
    for (const kind of RESOURCE_KINDS) {
      const t = g.types[kind];
      const resources: Record<string, string> = {};
      for (const [name, res] of t.resources)
        resources[name] = `${res.version} ${createHash('sha256').update(res.any).digest('hex')}`;
      out[group][kind] = { version: t.version, resources };
    }
  }
  all.push({ treeHash: r.treeHash, groups: out });
}
process.stdout.write(`${JSON.stringify(all)}\n`);
