import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { projectPath, SERVER_ENTRY } from '../../src/shared/paths.ts';
import { SERVER_NODE_FLAGS } from '../../src/shared/runtime-flags.ts';

export interface ServerProcess {
  child: ChildProcess;
  grpcPort: number;
  adminPort: number;
  restPort: number;
  /** Everything the process printed so far (JSON log lines). */
  output(): string;
  admin(path: string): Promise<any>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * The node arguments that run the fleetxds command: the server as deployed (dist/, which `npm test`
 * builds from the current sources before any test starts, and says so in FLEETXDS_TEST_BUILT); a
 * test file run on its own runs the sources under tsx.
 */
export function fleetxdsArgs(): string[] {
  return process.env.FLEETXDS_TEST_BUILT === '1' && existsSync(SERVER_ENTRY)
    ? [SERVER_ENTRY]
    : ['--import', 'tsx', projectPath('src', 'cli', 'main.ts')];
}

const children = new Set<ChildProcess>();
// Never leave a server behind, whatever happens to the test.
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/**
 * Runs `fleetxds serve` as a real process, with the Node flags it is deployed with, from the build `npm test` made
 * (see fleetxdsArgs; or `entry`: a built one, as deployed; benchmarks build it first) and waits until it
 * reports it is serving. With FLEETXDS_CPU_PROF=<dir> (benchmarks) the server writes a V8 CPU
 * profile there when it stops with SIGTERM (`--cpu-prof` is not allowed in NODE_OPTIONS).
 */
export function spawnServer(
  configFile: string,
  env: Record<string, string> = {},
  /** A built server's command line (SERVER_ENTRY: as deployed); by default the sources, under tsx. */
  { entry }: { entry?: string } = {},
): Promise<ServerProcess> {
  const prof = process.env.FLEETXDS_CPU_PROF;
  const child = spawn(
    process.execPath,
    [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      ...SERVER_NODE_FLAGS,
      ...(entry ? [entry] : fleetxdsArgs()),
      'serve',
      '--config',
      configFile,
    ],
    {
      cwd: projectPath(),
      env: {
        ...process.env,
        FLEETXDS_GRPC_LISTEN: '127.0.0.1:0',
        FLEETXDS_ADMIN_LISTEN: '127.0.0.1:0',
        FLEETXDS_REST_LISTEN: '127.0.0.1:0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start (it must log "fleetxds serving" at info level):\n${out}`));
    }, 30_000);
    const onData = () => {
      const line = out.split('\n').find((l) => l.includes('"fleetxds serving"'));
      if (!line) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      const info = JSON.parse(line);
      const grpcPort = Number(String(info.grpc).split(':').pop());
      const adminPort = Number(String(info.admin).split(':').pop());
      const restPort = info.rest ? Number(String(info.rest).split(':').pop()) : 0;
      resolve({
        child,
        grpcPort,
        adminPort,
        restPort,
        output: () => out,
        admin: async (path) => (await fetch(`http://127.0.0.1:${adminPort}${path}`)).json(),
        stop: (signal = 'SIGTERM') =>
          new Promise((res) => {
            // Already gone (an exit code, or killed by a signal): nothing to wait for.
            if (child.exitCode !== null || child.signalCode !== null) return res(child.exitCode);
            child.once('exit', (code) => res(code));
            child.kill(signal);
          }),
      });
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer); // or a test of a server that must not start waits for it
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  everyMs = 100,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < until) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/**
 * The same without blocking this process: for a CLI call to a server running in this very process
 * (runCli would hold the event loop the server answers on).
 */
export function runCliAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...fleetxdsArgs(), ...args], { cwd: projectPath() });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs the fleetxds CLI to completion from the project root. */
export function runCli(args: string[], env: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [...fleetxdsArgs(), ...args], {
    cwd: projectPath(),
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
}
