/**
 * A throwaway PostgreSQL server from Debian's packages (the `postgresql` package; .ci/run installs
 * it), in a temporary folder on a free loopback port, with trust authentication. As root it runs as
 * the `postgres` user: PostgreSQL refuses to run as root. Stoppable and restartable, to test what
 * replicas do while it is unreachable.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './envoy.ts';
import { tempDir } from './tree.ts';

export interface TestPostgres {
  url: string;
  /** Stops the server (fast shutdown: connections are cut). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  close(): Promise<void>;
}

function binDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(base, v, 'bin')).find((d) => existsSync(join(d, 'postgres')));
}

export function postgresAvailable(): boolean {
  return binDir() !== undefined;
}

const asRoot = process.getuid?.() === 0;
/** Runs a PostgreSQL program as the postgres user when we are root. */
const command = (bin: string, args: string[]): [string, string[]] =>
  asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];

export async function startPostgres(): Promise<TestPostgres> {
  const bin = binDir();
  if (!bin) throw new Error('PostgreSQL is not installed (Debian package postgresql)');
  const dir = tempDir('fleetxds-pg-');
  if (asRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const [initCmd, initArgs] = command(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'fleetxds',
    '--auth=trust',
    '-E',
    'UTF8',
  ]);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';

  const start = async () => {
    const [cmd, args] = command(join(bin, 'postgres'), [
      '-D',
      data,
      '-k',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
    ]);
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 20_000;
    while (!output.includes('ready to accept connections')) {
      if (proc.exitCode !== null) throw new Error(`postgres exited: ${output}`);
      if (Date.now() > deadline) throw new Error(`postgres did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    // "Fast" shutdown: every connection is cut at once, as when the store's machine goes away.
    const [cmd, args] = command(join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'fast', '-w']);
    spawnSync(cmd, args, { encoding: 'utf8' });
    await exited;
    output = '';
  };
  await start();
  return {
    url: `postgres://fleetxds@127.0.0.1:${port}/postgres`,
    start,
    stop,
    close: stop,
  };
}
