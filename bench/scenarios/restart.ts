/**
 * Restart: time from starting the (built) server process to the first ADS response served from the
 * last good version in SQLite, for a database holding the given config.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { connect, T } from '../../test/helpers/ads-client.ts';
import { tempDir } from '../../test/helpers/tree.ts';
import { sleep } from '../lib/proc.ts';

export async function restartScenario(
  configDir: string,
  database: string,
): Promise<{ msToFirstResponse: number; clusters: number }> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const settings = join(tempDir('fleetxds-bench-'), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${configDir}\ndatabase: ${database}\ngrpc: { listen: 127.0.0.1:${port} }\nadmin: { listen: ` +
      `127.0.0.1:0 }\nlog: { level: warn }\n`,
  );
  const t0 = Date.now();
  // FLEETXDS_CPU_PROF=DIR: the server writes its CPU profile there (it is stopped with SIGTERM then).
  const prof = process.env.FLEETXDS_CPU_PROF;
  const child = spawn(
    process.execPath,
    [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      projectPath('dist', 'src', 'cli', 'main.js'),
      'serve',
      '--config',
      settings,
    ],
    { stdio: 'ignore' },
  );
  try {
    for (;;) {
      const c = connect(port);
      const s = c.open();
      s.send({ node: { id: 'restart-probe', cluster: 'x' }, type_url: T.cluster });
      try {
        const r = await Promise.race([
          s.next(5_000),
          s.status.then((st) => {
            throw new Error(st.details);
          }),
        ]);
        const ms = Date.now() - t0;
        s.close();
        c.close();
        return { msToFirstResponse: ms, clusters: r.resources.length };
      } catch {
        s.close();
        c.close();
        if (Date.now() - t0 > 60_000) throw new Error('server never answered');
        await sleep(20);
      }
    }
  } finally {
    if (prof) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    } else child.kill('SIGKILL');
  }
}
