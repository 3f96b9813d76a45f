/**
 * Quiet-period debounce with a ceiling (Contour's holdoff, Istio's DebounceAfter/DebounceMax):
 * `fn` runs once `quietMs` pass without a new trigger, and at the latest `maxWaitMs` after the
 * first trigger of a burst, so a `git checkout` of 200 files yields one apply.
 */
export class Debouncer {
  private timer?: NodeJS.Timeout;
  private firstAt?: number;

  constructor(
    private readonly fn: () => void,
    private readonly quietMs: number,
    private readonly maxWaitMs: number,
  ) {}

  trigger(): void {
    const now = Date.now();
    this.firstAt ??= now;
    const wait = Math.max(0, Math.min(this.quietMs, this.firstAt + this.maxWaitMs - now));
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fire(), wait);
  }

  private fire(): void {
    this.timer = undefined;
    this.firstAt = undefined;
    this.fn();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.firstAt = undefined;
  }
}
