import type { Logger } from 'pino';

interface Step {
  what: string;
  undo: () => unknown;
}

/**
 * What a start has set up, undone in the reverse order: the server's close, and a start that fails
 * midway (a port taken, an unreachable file), which must leave no listener bound, no serving thread,
 * no timer and no open database behind it.
 */
export class Teardown {
  private readonly stops: Step[] = [];
  private readonly closes: Step[] = [];

  /**
   * Registers how to stop something that acts on its own (a timer, a driver, a feed from the other
   * replicas): every such stop runs before anything is closed, so nothing starts new work on what
   * is being closed.
   */
  stopFirst(what: string, undo: () => unknown): void {
    this.stops.push({ what, undo });
  }

  /** Registers how to undo what was just set up; undone before anything registered earlier. */
  defer(what: string, undo: () => unknown): void {
    this.closes.push({ what, undo });
  }

  /** Undoes every step, stops first, then newest first. A step that fails is logged; the rest still run. */
  async run(log: Logger): Promise<void> {
    for (const steps of [this.stops, this.closes]) {
      for (let step = steps.pop(); step; step = steps.pop()) {
        try {
          await step.undo();
        } catch (err) {
          log.error({ err }, `shutting down: ${step.what} failed`);
        }
      }
    }
  }
}
