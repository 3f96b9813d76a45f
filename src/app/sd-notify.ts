/**
 * systemd notifications without a native module: Node has no AF_UNIX datagram sockets, so the
 * `systemd-notify` helper sends them (the unit needs NotifyAccess=all). No-ops outside systemd.
 */
import { execFile } from 'node:child_process';

export function sdNotify(...args: string[]): Promise<void> {
  if (!process.env.NOTIFY_SOCKET) return Promise.resolve();
  return new Promise((resolve) => {
    execFile('systemd-notify', args, { timeout: 5000 }, () => resolve());
  });
}

/** Pings the watchdog at half the interval systemd asks for, while `healthy()` holds. */
export function startWatchdog(healthy: () => boolean): NodeJS.Timeout | undefined {
  const usec = Number(process.env.WATCHDOG_USEC ?? 0);
  if (!usec || !process.env.NOTIFY_SOCKET) return undefined;
  const t = setInterval(() => {
    if (healthy()) void sdNotify('WATCHDOG=1');
  }, usec / 2000);
  t.unref();
  return t;
}
