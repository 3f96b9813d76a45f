/**
 * A throwaway copy of this machine to install the Debian package into, as root, without touching
 * the machine: a copy-on-write overlay of / in its own mount, network and PID namespaces (so the
 * server can take its documented ports beside anything running here, and every process started in
 * it dies with it). systemctl is test/helpers/fake-systemctl.py, which runs units from their unit
 * files; /run/systemd/system exists, so the maintainer scripts call it as they would call systemd.
 * The checkout is mounted read-only at its own path (Envoy's binaries live there).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { shellQuote } from '../../src/shared/shell-quote.ts';
import { waitFor } from './process.ts';
import { tempDir } from './tree.ts';

export interface SandboxRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** A reaper as PID 1 of the namespace: services the fake systemctl starts outlive the command. */
const REAPER = `
import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.2)
`;

export class InstallSandbox {
  private constructor(
    private readonly holder: ChildProcess,
    private readonly init: number,
    private readonly dir: string,
  ) {}

  /** `mounts`: host folders shown read-only inside at the same path (the release's folder). */
  static async create(mounts: string[] = []): Promise<InstallSandbox> {
    if (process.getuid?.() !== 0) throw new Error('the install test installs a package: it runs as root (CI does)');
    const dir = tempDir('fleetxds-sandbox-');
    const [upper, work, root] = ['upper', 'work', 'root'].map((d) => join(dir, d)) as [string, string, string];
    for (const d of [upper, work, root]) mkdirSync(d);
    const q = shellQuote;
    const shown = [projectPath(), ...mounts]
      .map(
        (m) =>
          `mkdir -p ${q(root + m)} && mount --bind ${q(m)} ${q(root + m)} && mount -o remount,bind,ro ${q(root + m)}`,
      )
      .join('\n');
    const setup = `set -e
mount -t overlay overlay -o lowerdir=/,upperdir=${q(upper)},workdir=${q(work)} ${q(root)}
mount -t proc proc ${q(root)}/proc
mount --rbind /dev ${q(root)}/dev
mount --rbind /sys ${q(root)}/sys
mount -t tmpfs -o mode=1777 tmpfs ${q(root)}/tmp
mount -t tmpfs tmpfs ${q(root)}/run
mkdir -p ${q(root)}/run/systemd/system
${shown}
install -m 0755 ${q(projectPath('test', 'helpers', 'fake-systemctl.py'))} ${q(root)}/usr/local/sbin/systemctl
ln -sf systemctl ${q(root)}/usr/local/sbin/journalctl
ip link set lo up
echo sandbox-ready
exec chroot ${q(root)} /usr/bin/python3 -c ${q(REAPER)}
`;
    const holder = spawn(
      'unshare',
      ['--mount', '--net', '--pid', '--fork', '--propagation', 'private', 'sh', '-c', setup],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    holder.stdout.on('data', (d) => (out += d));
    holder.stderr.on('data', (d) => (out += d));
    await waitFor(`the sandbox (${out})`, () => out.includes('sandbox-ready') || holder.exitCode !== null, 20_000, 50);
    if (holder.exitCode !== null) throw new Error(`the sandbox did not start:\n${out}`);
    // The namespace's PID 1, as this machine numbers it: the child unshare forked.
    const init = await waitFor('the sandbox init', () => {
      const children = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim();
      const pid = Number(children.split(' ')[0]);
      if (!pid) return undefined;
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('/usr/bin/python3') ? pid : undefined;
    });
    return new InstallSandbox(holder, init, dir);
  }

  /** Runs a bash script inside, as root, from /root, with the PATH a root login has. */
  run(script: string, timeoutMs = 120_000): Promise<SandboxRun> {
    return new Promise((resolve) => {
      const child = spawn(
        'nsenter',
        ['-t', String(this.init), '-m', '-n', '-p', '-r', '-w', '--', 'bash', '-c', `cd /root && ${script}`],
        {
          env: {
            PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
            HOME: '/root',
            LANG: 'C.UTF-8',
            DEBIAN_FRONTEND: 'noninteractive',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (status) => {
        clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
    });
  }

  /** Everything inside dies with the namespace's PID 1; the overlay goes with the mount namespace. */
  close(): void {
    spawnSync('kill', ['-KILL', String(this.init)]);
    this.holder.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
