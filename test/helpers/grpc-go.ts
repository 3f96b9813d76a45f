/**
 * The gRPC-Go program of the test harness (test/grpc-go, built by test/grpc-go/build.sh): as an
 * xDS client it reads the bootstrap it is given, dials an xds:/// target and reports what it got;
 * with -serve it is a backend reporting its load (ORCA). Started asynchronously: the fleetxds a
 * test talks to runs in the test's own process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { tempDir } from './tree.ts';

const PROGRAM = projectPath('.grpc-go', 'grpcgo-client');

export interface GoRun {
  /** The lines it printed ("ok <backend>", "held <ok> <failed>", "spread <backend>=<n> ...", "error ..."). */
  lines: string[];
  /** What gRPC-Go logged (warnings and above), for failure messages. */
  log: string[];
  done: Promise<number | null>;
}

/** The client on `target` with `bootstrap` (written to a file of its own) and the given flags. */
export function runGoClient(target: string, bootstrap: object, args: string[] = []): GoRun {
  const file = join(tempDir(), 'bootstrap.json');
  writeFileSync(file, JSON.stringify(bootstrap));
  const child = spawn(PROGRAM, ['-target', `xds:///${target}`, ...args], {
    env: { ...process.env, GRPC_XDS_BOOTSTRAP: file, GRPC_GO_LOG_SEVERITY_LEVEL: 'warning' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: GoRun = { lines: [], log: [], done: new Promise((r) => child.on('exit', (code) => r(code))) };
  child.stderr.on('data', (d: Buffer) => run.log.push(d.toString()));
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    run.lines.push(...parts);
  });
  return run;
}

/** A failure with what the Go client logged. */
export const withLog = (go: GoRun) => (e: Error) => {
  throw new Error(`${e.message}\n${go.log.join('')}`);
};

/** How many RPCs each backend answered, from the client's "spread" line (-spread N). */
export async function spreadOf(go: GoRun): Promise<Record<string, number>> {
  await go.done;
  const line = go.lines.find((l) => l.startsWith('spread '));
  if (!line) throw new Error(`no spread line: ${go.lines.join('\n')}\n${go.log.join('')}`);
  return Object.fromEntries(
    line
      .split(' ')
      .slice(1)
      .map((kv) => [kv.split('=')[0]!, Number(kv.split('=')[1])]),
  );
}

/** A backend answering every method with its name and reporting `cpu` and 100 requests per second. */
export async function startGoBackend(name: string, cpu: number): Promise<{ port: number; process: ChildProcess }> {
  const child = spawn(PROGRAM, ['-serve', '127.0.0.1:0', '-name', name, '-cpu', String(cpu)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
      else reject(new Error(d.toString()));
    });
    child.once('exit', (code) => reject(new Error(`the Go backend exited (${code})`)));
  });
  return { port, process: child };
}
