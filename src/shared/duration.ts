/** Operator durations: `250ms`, `5s`, `1.5s`, `2m`, `1h`. Rendered as proto3 JSON Duration strings. */
export const DURATION_PATTERN = '^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$';
const re = new RegExp(DURATION_PATTERN);
const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDurationMs(text: string): number | undefined {
  const unit = re.exec(text)?.[2];
  if (unit === undefined) return undefined;
  const num = Number(text.slice(0, text.length - unit.length));
  return num * (unitMs[unit] ?? Number.NaN);
}

/** Milliseconds to the proto3 JSON form: seconds with up to 9 fractional digits, suffix `s`. */
export function msToProtoDuration(ms: number): string {
  const nanos = Math.round(ms * 1e6);
  const seconds = Math.floor(nanos / 1e9);
  const frac = nanos % 1e9;
  if (frac === 0) return `${seconds}s`;
  return `${seconds}.${String(frac).padStart(9, '0').replace(/0+$/, '')}s`;
}

export function durationToProto(text: string): string {
  const ms = parseDurationMs(text);
  if (ms === undefined) throw new Error(`invalid duration ${text}`);
  return msToProtoDuration(ms);
}
