/**
 * At most `perWindow` log lines of one kind per window: lines caused by clients (NACKs) must not
 * fill the journal however many clients there are. The first line allowed after a window in which
 * some were dropped says how many.
 */
export class LineBudget {
  private windowStart = -Infinity;
  private used = 0;
  private dropped = 0;
  private unreported = 0;

  constructor(
    private readonly perWindow: number,
    private readonly windowMs: number,
  ) {}

  /** Whether a line may be written now, and how many were dropped before it (to say so in it). */
  take(now = Date.now()): { allowed: boolean; droppedBefore: number } {
    if (now - this.windowStart >= this.windowMs) {
      this.unreported += this.dropped;
      this.windowStart = now;
      this.used = 0;
      this.dropped = 0;
    }
    if (this.used >= this.perWindow) {
      this.dropped++;
      return { allowed: false, droppedBefore: 0 };
    }
    this.used++;
    const droppedBefore = this.unreported;
    this.unreported = 0;
    return { allowed: true, droppedBefore };
  }
}
