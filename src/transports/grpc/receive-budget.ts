/**
 * Bytes of request messages the gRPC server holds before handing them on: unfinished messages and
 * compressed ones waiting to be inflated. A client decides how many it sends, so they are bounded
 * per connection and for the whole server (each serving thread has its own), beside the size of
 * one message (MessageReader) and the streams of one connection (HTTP/2 settings).
 */
export class ReceiveBudget {
  private total = 0;
  private readonly byConnection = new WeakMap<object, number>();

  constructor(
    readonly perConnection: number,
    readonly perServer: number,
  ) {}

  /** Takes `n` bytes for `connection`; the bound passed (and nothing taken) when it cannot. */
  take(connection: object, n: number): 'connection' | 'server' | undefined {
    const held = this.byConnection.get(connection) ?? 0;
    if (held + n > this.perConnection) return 'connection';
    if (this.total + n > this.perServer) return 'server';
    this.byConnection.set(connection, held + n);
    this.total += n;
    return undefined;
  }

  give(connection: object, n: number): void {
    if (n <= 0) return;
    this.byConnection.set(connection, (this.byConnection.get(connection) ?? 0) - n);
    this.total -= n;
  }
}

/**
 * At most `limit` tasks at once (inflating requests on libuv's thread pool, which file reads
 * share); the others wait their turn in order.
 */
export class TaskGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** Runs `task` when a place is free; it calls the function it is given when it is done. */
  run(task: (done: () => void) => void): void {
    const start = () => {
      this.running++;
      let finished = false;
      task(() => {
        if (finished) return;
        finished = true;
        this.running--;
        this.waiting.shift()?.();
      });
    };
    if (this.running < this.limit) start();
    else this.waiting.push(start);
  }
}
