/**
 * One log line per window for events anyone can cause (refused calls): the first event of a window
 * is logged with the number held back since the last line, the others only counted.
 */
export class LogThrottle {
  private windowStart = -Infinity;
  private held = 0;

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether to log this event, and how many events were held back before it. */
  note(): { log: boolean; heldBack: number } {
    const t = this.now();
    if (t - this.windowStart < this.windowMs) {
      this.held++;
      return { log: false, heldBack: 0 };
    }
    this.windowStart = t;
    const heldBack = this.held;
    this.held = 0;
    return { log: true, heldBack };
  }
}
