import type { Logger } from 'pino';
import type { ApplyOutcome } from './pipeline.ts';

export const READ_RETRY_FIRST_MS = 1000;
export const READ_RETRY_MAX_MS = 30_000;

/** A tree that reads keep failing on: since the first failed read, the latest reason, the next read. */
export interface UnreadableTree {
  since: string;
  reason: string;
  failedReads: number;
  nextReadAt: string;
}

/**
 * Reads the config tree again soon after a read that could not complete for a reason that passes
 * (too many open files, an NFS hiccup, a file removed while the tree was read; read-tree.ts): after
 * 1 s, then doubling up to 30 s, until a read completes. Without it the tree would wait for the
 * next change or the watcher's full re-read (every minute by default), with a correct push unserved.
 * Any read of the tree, whatever started it, settles the schedule.
 */
export class ReadRetry {
  private timer?: NodeJS.Timeout;
  private nextMs: number;
  private failing?: UnreadableTree;

  constructor(
    private readonly read: () => void,
    private readonly log: Logger,
    private readonly firstMs = READ_RETRY_FIRST_MS,
    private readonly maxMs = READ_RETRY_MAX_MS,
  ) {
    this.nextMs = firstMs;
  }

  /** While reads of the tree keep failing (the status page shows it); undefined once one completes. */
  get unreadable(): UnreadableTree | undefined {
    return this.failing;
  }

  /**
   * Called with the outcome of every read of the tree (undefined: the apply failed); `serving`:
   * whether a version is served meanwhile (the log says which).
   */
  settled(outcome: ApplyOutcome | undefined, serving = true): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (outcome?.status !== 'unreadable') {
      this.nextMs = this.firstMs;
      this.failing = undefined;
      return;
    }
    const retryInMs = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, this.maxMs);
    const now = Date.now();
    this.failing = {
      since: this.failing?.since ?? new Date(now).toISOString(),
      reason: outcome.reason,
      failedReads: (this.failing?.failedReads ?? 0) + 1,
      nextReadAt: new Date(now + retryInMs).toISOString(),
    };
    this.log.warn(
      { reason: outcome.reason, retryInMs },
      serving
        ? 'config tree could not be read completely; still serving the last good version; reading it again'
        : `nothing served yet: the config tree could not be read completely (${outcome.reason}); reading it again`,
    );
    this.timer = setTimeout(this.read, retryInMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
