/**
 * The REST poll state machine (src/transports/rest-poll.ts), table by table: what a poll's reported
 * version means for a subscription, whether a poll is answered or held, and whether a new version
 * releases a held poll. The REST server's behaviour over real sockets is test/transports/rest.test.ts;
 * with real Envoy, test/e2e/envoy-transports.test.ts and envoy-nack.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  answered,
  awaitingReport,
  newPollSubscription,
  observePoll,
  pollAnswer,
  releasesHeld,
  type PollEvent,
  type PollSubscription,
} from '../../src/transports/rest-poll.ts';

type State = Partial<Omit<PollSubscription, 'kind' | 'lastPollAt'>>;
const sub = (s: State): PollSubscription => ({ ...newPollSubscription('cluster', 0), ...s });
const SAME_CONNECTION = { id: 7, polls: 3 };
const NEW_CONNECTION = { id: 9, polls: 1 };

const OBSERVE: {
  name: string;
  before: State;
  reported: string;
  connection?: { id: number; polls: number };
  event: PollEvent['type'];
  after: State;
}[] = [
  { name: 'a first poll: nothing sent yet', before: {}, reported: '', event: 'none', after: {} },
  {
    name: 'a poll reporting what was sent: an ACK',
    before: { sent: 'v1', sentOn: 7 },
    reported: 'v1',
    event: 'acked',
    after: { sent: 'v1', sentOn: 7, acked: 'v1' },
  },
  {
    name: 'the same report again: nothing new',
    before: { sent: 'v1', sentOn: 7, acked: 'v1' },
    reported: 'v1',
    event: 'none',
    after: { sent: 'v1', sentOn: 7, acked: 'v1' },
  },
  {
    name: 'still the version before the one sent: a rejection, reported once',
    before: { sent: 'v2', sentOn: 7, acked: 'v1' },
    reported: 'v1',
    event: 'rejected',
    after: { sent: 'v2', sentOn: 7, acked: 'v1', nackedSent: 'v2' },
  },
  {
    name: 'the same rejection polled again: not reported twice',
    before: { sent: 'v2', sentOn: 7, acked: 'v1', nackedSent: 'v2' },
    reported: 'v1',
    event: 'none',
    after: { sent: 'v2', sentOn: 7, acked: 'v1', nackedSent: 'v2' },
  },
  {
    name: 'a proxy that never accepted anything keeps reporting none on the same connection: it refused',
    before: { sent: 'v1', sentOn: 7 },
    reported: '',
    event: 'rejected',
    after: { sent: 'v1', sentOn: 7, nackedSent: 'v1' },
  },
  {
    name: 'no version after one was accepted: the proxy restarted',
    before: { sent: 'v2', sentOn: 7, acked: 'v2' },
    reported: '',
    event: 'restarted',
    after: { sent: 'v2', sentOn: 7, acked: 'v2' },
  },
  {
    name: 'no version as the first poll of a new connection: the proxy restarted',
    before: { sent: 'v1', sentOn: 7 },
    reported: '',
    connection: NEW_CONNECTION,
    event: 'restarted',
    after: { sent: 'v1', sentOn: 7 },
  },
  {
    name: 'no version as the first poll of the connection the answer went out on: a rejection',
    before: { sent: 'v1', sentOn: 9 },
    reported: '',
    connection: NEW_CONNECTION,
    event: 'rejected',
    after: { sent: 'v1', sentOn: 9, nackedSent: 'v1' },
  },
  {
    name: 'a version the proxy cannot have had: nothing inferred',
    before: { sent: 'v2', sentOn: 7, acked: 'v1' },
    reported: 'v0',
    event: 'none',
    after: { sent: 'v2', sentOn: 7, acked: 'v1' },
  },
];

for (const row of OBSERVE) {
  test(`observe: ${row.name}`, () => {
    const s = sub(row.before);
    const event = observePoll(s, row.reported, row.connection ?? SAME_CONNECTION, 42);
    assert.is(event.type, row.event);
    const { kind: _k, lastPollAt, ...after } = s;
    assert.equal(after, row.after);
    assert.is(lastPollAt, 42);
  });
}

const ANSWER: { name: string; state: State; reported: string; selected: string; answer: 'send' | 'unchanged' }[] = [
  { name: 'a first poll is answered', state: {}, reported: '', selected: 'v1', answer: 'send' },
  {
    name: 'an older version is answered',
    state: { sent: 'v1', acked: 'v1' },
    reported: 'v1',
    selected: 'v2',
    answer: 'send',
  },
  {
    name: 'the current version is unchanged (held)',
    state: { sent: 'v2', acked: 'v2' },
    reported: 'v2',
    selected: 'v2',
    answer: 'unchanged',
  },
  {
    name: 'a refused version is not sent again',
    state: { sent: 'v2', acked: 'v1', nackedSent: 'v2' },
    reported: 'v1',
    selected: 'v2',
    answer: 'unchanged',
  },
  {
    name: 'a newer version after a refused one is sent',
    state: { sent: 'v2', acked: 'v1', nackedSent: 'v2' },
    reported: 'v1',
    selected: 'v3',
    answer: 'send',
  },
  {
    name: 'a proxy that refused its first answer is not sent it again',
    state: { sent: 'v1', nackedSent: 'v1' },
    reported: '',
    selected: 'v1',
    answer: 'unchanged',
  },
];

for (const row of ANSWER) {
  test(`answer: ${row.name}`, () => {
    assert.is(pollAnswer(sub(row.state), row.reported, row.selected), row.answer);
  });
}

const RELEASE: { name: string; state: State; held: string; selected: string; releases: boolean }[] = [
  { name: 'a new version releases a held poll', state: {}, held: 'v1', selected: 'v2', releases: true },
  { name: 'the same version keeps it held', state: {}, held: 'v1', selected: 'v1', releases: false },
  { name: 'a refused version keeps it held', state: { nackedSent: 'v2' }, held: 'v1', selected: 'v2', releases: false },
];

for (const row of RELEASE) {
  test(`release: ${row.name}`, () => {
    assert.is(releasesHeld(sub(row.state), row.held, row.selected), row.releases);
  });
}

test('an answer makes the subscription wait for the report, and the report ends the wait', () => {
  const s = newPollSubscription('endpoint', 0);
  assert.not.ok(awaitingReport(s));
  answered(s, 'v1', 7);
  assert.ok(awaitingReport(s));
  assert.is(observePoll(s, 'v1', SAME_CONNECTION, 1).type, 'acked');
  assert.not.ok(awaitingReport(s));
});

test.run();
