/** Push health minute by minute (status/push-health.ts): counts, latency quantiles, the hour's window. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PushHealth } from '../../src/status/push-health.ts';

const T0 = Date.parse('2026-11-26T10:00:00.000Z');

function at(clock: { now: number }, connected = () => 7): PushHealth {
  return new PushHealth(connected, () => clock.now);
}

test('a minute counts pushes, ACKs and NACKs; p50 and p99 from the ACK latencies', () => {
  const clock = { now: T0 + 5_000 };
  const h = at(clock);
  for (let i = 0; i < 98; i++) h.acked(0.01);
  h.acked(2);
  h.acked(2);
  h.pushed();
  h.pushed();
  h.nacked();
  h.acked(undefined); // an ACK of a version whose publish is unknown: counted, not timed
  const last = h.series().at(-1)!;
  assert.equal(
    [last.at, last.pushes, last.acks, last.nacks, last.connected],
    [new Date(T0).toISOString(), 2, 101, 1, 7],
  );
  assert.ok(last.p50! >= 0.01 && last.p50! < 0.012, `p50 ${last.p50}`);
  assert.ok(last.p99! >= 2 && last.p99! < 2.3, `p99 ${last.p99}`);
});

test('an hour of minutes, oldest first; quiet minutes are zeros; a closed minute keeps its proxies', () => {
  const clock = { now: T0 };
  let connected = 3;
  const h = at(clock, () => connected);
  h.pushed();
  clock.now += 60_000;
  connected = 9;
  h.pushed(); // closes 10:00 with 9 connected at its end
  clock.now += 5 * 60_000;
  const s = h.series();
  assert.is(s.length, 60);
  assert.is(s[59]!.at, '2026-11-26T10:06:00.000Z');
  const byAt = new Map(s.map((p) => [p.at.slice(11, 16), p]));
  assert.equal([byAt.get('10:00')!.pushes, byAt.get('10:00')!.connected], [1, 9]);
  assert.equal([byAt.get('10:03')!.pushes, byAt.get('10:03')!.p50], [0, undefined]);
  assert.is(byAt.get('10:06')!.connected, 9, 'now: the proxies connected now');
});

test('minutes older than an hour are dropped, however long it runs', () => {
  const clock = { now: T0 };
  const h = at(clock);
  for (let m = 0; m < 300; m++) {
    h.pushed();
    clock.now += 60_000;
  }
  const s = h.series();
  assert.is(s.length, 60);
  assert.ok(s.every((p) => p.pushes === 1 || p.at === s[59]!.at));
  assert.ok((h as unknown as { minutes: unknown[] }).minutes.length <= 61);
});

test('latencies past the last bucket count as the last bound', () => {
  const h = at({ now: T0 });
  h.acked(500);
  assert.ok(h.series().at(-1)!.p99! <= 60);
});

test.run();
