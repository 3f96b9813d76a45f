/** The real server as a process on a generated tree, for benchmarks: the compiled server, as deployed. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVER_ENTRY } from '../../src/shared/paths.ts';
import { spawnServer, type ServerProcess } from '../../test/helpers/process.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { generateTree, type TreeSpec } from './generate.ts';

/** `extra`: more settings lines (YAML), e.g. a `rest:` section. */
export async function benchServer(
  services = 100,
  extra = '',
  grpc = '{ listen: 127.0.0.1:0 }',
  tree: Partial<TreeSpec> = {},
): Promise<{ server: ServerProcess; cfg: string; database: string }> {
  const dir = tempDir('fleetxds-bench-');
  const cfg = join(dir, 'cfg');
  generateTree(cfg, { services, routesPerVhost: 100, ...tree });
  const settings = join(dir, 'fleetxds.yaml');
  const database = join(dir, 'db', 'x.db');
  writeFileSync(
    settings,
    `configDir: ${cfg}\ndatabase: ${database}\ngrpc: ${grpc}\nadmin: { listen: 127.0.0.1:0 }\n` +
      `watch: { debounceMs: 50, maxWaitMs: 200 }\nlog: { level: info }\n${extra}`,
  );
  return { server: await spawnServer(settings, {}, { entry: SERVER_ENTRY }), cfg, database };
}
