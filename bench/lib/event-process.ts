import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { projectPath } from '../../src/shared/paths.ts';

/** A harness process that reports on stdout as JSON lines `{"event": ..., ...}` and takes commands on stdin. */
export class EventProcess {
  private readonly waiters: { event: string; resolve: (v: any) => void; reject: (e: Error) => void }[] = [];
  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let msg: any;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      const i = this.waiters.findIndex((w) => w.event === msg.event);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(msg);
    });
    child.stderr!.on('data', (d) => process.stderr.write(d));
    // A harness that died answers nothing more: fail what waits for it now, not at its timeout.
    child.once('exit', (code, signal) => {
      for (const w of this.waiters.splice(0))
        w.reject(new Error(`harness exited (${signal ?? code}) before ${w.event}`));
    });
  }
  next(event: string, timeoutMs = 300_000): Promise<any> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`timeout waiting for ${event}`)), timeoutMs);
      this.waiters.push({
        event,
        resolve: (v) => (clearTimeout(t), resolve(v)),
        reject: (e) => (clearTimeout(t), reject(e)),
      });
    });
  }
  send(cmd: object): void {
    this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }
}

/**
 * A TypeScript harness of bench/lib (`script`: its file name) run under tsx, as an EventProcess
 * (its stdin open for the commands `send` writes).
 */
export function libHarness(script: string, args: readonly (string | number)[]): EventProcess {
  return new EventProcess(
    spawn(process.execPath, ['--import', 'tsx', projectPath('bench', 'lib', script), ...args.map(String)], {
      cwd: projectPath(),
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
}
