/**
 * Files for 100 node groups: full render (every type, every group), then a one-route change:
 * time, files and bytes written (only changed files are rewritten).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkTree } from '../../src/compile/check-tree.ts';
import { PipelineCaches } from '../../src/compile/caches.ts';
import type { PublishedConfig } from '../../src/snapshot/snapshot-cache.ts';
import { FileRenderer } from '../../src/transports/files/file-renderer.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { generateTree, vhostYaml } from '../lib/generate.ts';

async function publishedOf(cfg: string, caches: PipelineCaches): Promise<PublishedConfig> {
  const r = await checkTree(cfg, caches);
  if (!r.config) throw new Error('invalid generated tree');
  return {
    versionId: 0,
    modelHash: '',
    treeHash: r.treeHash,
    appliedAt: '',
    groups: r.config.groups,
    resolver: r.config.resolver,
  };
}

export async function filesScenario(groups = 100, services = 100): Promise<Record<string, number>> {
  const dir = tempDir('fleetxds-bench-');
  const cfg = join(dir, 'cfg');
  generateTree(cfg, { services, routesPerVhost: 100, groups });
  const caches = new PipelineCaches();
  const renderer = new FileRenderer({ dir: join(dir, 'out'), format: 'json', layout: 'files' });
  const p1 = await publishedOf(cfg, caches);
  const t0 = performance.now();
  const full = await renderer.render(p1);
  const t1 = performance.now();
  writeFileSync(join(cfg, 'routes', 'vh-0.yaml'), vhostYaml(0, 100, services).replace('/api/r7/', '/api/r7-moved/'));
  const p2 = await publishedOf(cfg, caches);
  const t2 = performance.now();
  const change = await renderer.render(p2);
  const t3 = performance.now();
  return {
    groups,
    servicesPerGroup: services,
    fullFiles: full.written,
    fullMB: Math.round(full.bytesWritten / 1e5) / 10,
    fullMs: Math.round(t1 - t0),
    changeFilesWritten: change.written,
    changeKB: Math.round(change.bytesWritten / 1024),
    changeMs: Math.round(t3 - t2),
  };
}
