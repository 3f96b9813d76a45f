/**
 * Push health over the last hour, minute by minute, for the status page's plots: responses sent,
 * ACKs and NACKs per minute, push latency (from a version's publish to a client's ACK of it) as
 * p50 and p99, and the proxies connected at the end of each minute. Fed by the metrics, whose
 * counters and histogram are cumulative and have no history of their own; bounded (60 minutes of
 * fixed-size buckets) whatever the traffic.
 */

/** Latency bucket upper bounds, seconds: 1 ms to 60 s, about 12% apart. */
const BOUNDS: readonly number[] = Array.from({ length: 97 }, (_, i) => 0.001 * 1.12 ** i).filter((b) => b <= 60);
const MINUTES = 60;
const MINUTE_MS = 60_000;

interface Minute {
  /** Start of the minute, ms since the epoch. */
  at: number;
  pushes: number;
  acks: number;
  nacks: number;
  /** ACK latencies counted per bucket (the last one: above every bound). */
  latency: Uint32Array;
  connected?: number;
}

export interface HealthPoint {
  at: string;
  pushes: number;
  acks: number;
  nacks: number;
  /** Seconds; absent for a minute without ACKs. */
  p50?: number;
  p99?: number;
  connected?: number;
}

export class PushHealth {
  private readonly minutes: Minute[] = [];

  constructor(
    /** Proxies connected now (sampled when a minute is closed). */
    private readonly connected: () => number,
    private readonly now: () => number = Date.now,
  ) {}

  pushed(): void {
    this.current().pushes++;
  }

  nacked(): void {
    this.current().nacks++;
  }

  acked(latencySeconds: number | undefined): void {
    const m = this.current();
    m.acks++;
    if (latencySeconds === undefined) return;
    let i = 0;
    while (i < BOUNDS.length && latencySeconds > BOUNDS[i]!) i++;
    m.latency[i]!++;
  }

  /** The last hour, oldest first, one point per minute (minutes without events included, as zeros). */
  series(): HealthPoint[] {
    const nowMinute = Math.floor(this.now() / MINUTE_MS) * MINUTE_MS;
    this.current();
    const byAt = new Map(this.minutes.map((m) => [m.at, m]));
    const out: HealthPoint[] = [];
    for (let at = nowMinute - (MINUTES - 1) * MINUTE_MS; at <= nowMinute; at += MINUTE_MS) {
      const m = byAt.get(at);
      const point: HealthPoint = { at: new Date(at).toISOString(), pushes: 0, acks: 0, nacks: 0 };
      if (m) {
        Object.assign(point, { pushes: m.pushes, acks: m.acks, nacks: m.nacks });
        const p50 = quantile(m.latency, 0.5);
        const p99 = quantile(m.latency, 0.99);
        if (p50 !== undefined) Object.assign(point, { p50, p99 });
        point.connected = at === nowMinute ? this.connected() : m.connected;
      }
      out.push(point);
    }
    return out;
  }

  /** The minute now, opened on first use; the one it follows is closed with the proxies connected. */
  private current(): Minute {
    const at = Math.floor(this.now() / MINUTE_MS) * MINUTE_MS;
    const last = this.minutes[this.minutes.length - 1];
    if (last?.at === at) return last;
    if (last) last.connected = this.connected();
    const m: Minute = { at, pushes: 0, acks: 0, nacks: 0, latency: new Uint32Array(BOUNDS.length + 1) };
    this.minutes.push(m);
    while (this.minutes.length > 0 && this.minutes[0]!.at <= at - MINUTES * MINUTE_MS) this.minutes.shift();
    return m;
  }
}

/** The bucket bound at or under which `q` of the counts fall (the last bound for the overflow bucket). */
function quantile(counts: Uint32Array, q: number): number | undefined {
  let total = 0;
  for (const c of counts) total += c;
  if (!total) return undefined;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    seen += counts[i]!;
    if (seen >= q * total) return BOUNDS[Math.min(i, BOUNDS.length - 1)];
  }
  return BOUNDS[BOUNDS.length - 1];
}
