import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

const TICKS = 100; // USER_HZ on Linux

/** CPU seconds (user+system) and RSS of a process, from /proc. */
export function procStats(pid: number): { cpuSeconds: number; rssMB: number } {
  const cpu = statCpu(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  return { cpuSeconds: cpu, rssMB: rss };
}

/** utime + stime of a /proc stat line, in seconds (the name in parentheses may hold spaces). */
function statCpu(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/**
 * CPU seconds of each thread of a process, by thread id, with the thread's name (Node names its
 * JavaScript threads MainThread and WorkerThread; V8Worker are V8's helpers, GC marking among them).
 * Threads that ended in between are missing from the second reading (their time is lost to it).
 */
export function threadCpu(pid: number): Map<string, { name: string; cpuSeconds: number }> {
  const out = new Map<string, { name: string; cpuSeconds: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      out.set(tid, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), cpuSeconds: statCpu(stat) });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export function machineInfo(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return (
    `${os.availableParallelism()} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ` +
    `${process.version}, ${os.platform()} ${os.release()}`
  );
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where the side-by-side benchmarks put the server and the load client (a 2-core VM has 0 and 1). */
export const SERVER_CORE = '0';
export const CLIENT_CORE = '1';

/** Pins every thread of a process to `cores` (taskset list, e.g. "0" or "0-1"). */
export function pin(pid: number, cores: string): void {
  execFileSync('taskset', ['-a', '-cp', cores, String(pid)], { stdio: 'ignore' });
}
