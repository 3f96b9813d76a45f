/**
 * The REST server's state as objects of their own: the pollers' subscriptions and connections
 * (Pollers), and the held long polls (HeldPolls). Each server has its own; nothing is module-wide.
 */
import { EventEmitter } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HeldPolls, type HeldPoll } from '../../src/transports/rest/held-polls.ts';
import { Pollers, MAX_SUBSCRIPTIONS_PER_NODE } from '../../src/transports/rest/pollers.ts';
import { answered } from '../../src/transports/rest-poll.ts';
import { NodeRegistry, type NackReport } from '../../src/status/node-registry.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

function poller(registry: NodeRegistry, nodeId = 'n1') {
  return registry.poller({
    nodeId,
    nodeCluster: 'c',
    group: 'default',
    transport: 'rest',
    peer: '127.0.0.1',
    userAgent: 'envoy',
    authenticated: false,
  });
}

test('connections are numbered per server, in the order they first poll', () => {
  const [a, b] = [new Pollers({ registry: new NodeRegistry() }), new Pollers({ registry: new NodeRegistry() })];
  const [s1, s2] = [{}, {}];
  assert.equal([a.connection(s1).id, a.connection(s2).id, a.connection(s1).id], [1, 2, 1]);
  assert.is(b.connection(s2).id, 1, 'a second server numbers its own connections');
});

test('a poll still reporting the version before the one sent is an inferred NACK, recorded once', () => {
  const nacks: NackReport[] = [];
  const registry = new NodeRegistry((n) => nacks.push(n));
  const pollers = new Pollers({ registry });
  const status = poller(registry);
  const socket = {};
  const first = pollers.observe(status, 'cluster', 'cluster\u0001*', '', socket);
  answered(first, 'v1', pollers.connection(socket).id);
  pollers.observe(status, 'cluster', 'cluster\u0001*', 'v1', socket);
  answered(first, 'v2', pollers.connection(socket).id);
  for (let i = 0; i < 3; i++) pollers.observe(status, 'cluster', 'cluster\u0001*', 'v1', socket);
  assert.is(nacks.length, 1);
  assert.is(nacks[0]!.version, 'v2');
  assert.match(nacks[0]!.message, /inferred: node reports version "v1" after receiving "v2"/);
  assert.is(status.types[TypeUrls.cluster]?.lastNack?.version, 'v2');
});

test('a poll with no version after an accepted one is a new run: its subscriptions start afresh', () => {
  const registry = new NodeRegistry();
  const pollers = new Pollers({ registry });
  const status = poller(registry);
  const socket = {};
  const sub = pollers.observe(status, 'cluster', 'k', '', socket);
  answered(sub, 'v1', pollers.connection(socket).id);
  pollers.observe(status, 'cluster', 'k', 'v1', socket);
  pollers.observe(status, 'listener', 'l', '', socket);
  const before = status.connectedAt;
  const again = pollers.observe(status, 'cluster', 'k', '', socket);
  assert.is.not(again, sub, 'a fresh subscription');
  assert.is(again.sent, undefined);
  assert.ok(status.connectedAt >= before);
  assert.equal(status.types, {});
});

test('subscriptions not polled are forgotten, and a node left with none leaves the poller list', () => {
  const registry = new NodeRegistry();
  const pollers = new Pollers({ registry });
  const status = poller(registry);
  pollers.observe(status, 'endpoint', 'a', '', {});
  assert.is(pollers.size, 1);
  pollers.expire(Date.now() - 60_000);
  assert.is(pollers.size, 1, 'polled within the window');
  pollers.expire(Date.now() + 1);
  assert.is(pollers.size, 0);
  assert.equal(registry.polling(), []);
  assert.is(registry.recentlyDisconnected()[0]?.nodeId, 'n1');
});

test('names sent by a client are bounded: past the limit the oldest subscription goes', () => {
  const registry = new NodeRegistry();
  const pollers = new Pollers({ registry });
  const status = poller(registry);
  const socket = {};
  const first = pollers.observe(status, 'endpoint', 'name-0', '', socket);
  for (let i = 1; i <= MAX_SUBSCRIPTIONS_PER_NODE; i++) pollers.observe(status, 'endpoint', `name-${i}`, '', socket);
  assert.is.not(pollers.observe(status, 'endpoint', 'name-0', '', socket), first, 'name-0 was evicted');
});

/** A reply as much as HeldPolls uses: its raw response's close event, sent and destroyed flags. */
function fakeReply() {
  const raw = Object.assign(new EventEmitter(), { destroyed: false });
  const codes: number[] = [];
  const reply = {
    raw,
    sent: false,
    code(c: number) {
      codes.push(c);
      return this;
    },
    send() {
      this.sent = true;
      return this;
    },
  };
  return { reply, codes, raw };
}

function heldPoll(reply: unknown): HeldPoll {
  return { reply } as unknown as HeldPoll;
}

test('held polls: a change answers with it, the deadline with 304, a closed client with nothing', async () => {
  const sent: HeldPoll[] = [];
  const held = new HeldPolls((h) => sent.push(h));
  const [changed, timedOut, gone] = [fakeReply(), fakeReply(), fakeReply()];
  const hChanged = heldPoll(changed.reply);
  held.hold(hChanged, 10_000);
  held.hold(heldPoll(timedOut.reply), 20);
  held.hold(heldPoll(gone.reply), 10_000);
  assert.is(held.size, 3);
  held.answer(hChanged, { t: {} as never, sel: {} as never });
  assert.equal(sent, [hChanged]);
  gone.raw.emit('close');
  assert.is(held.size, 1);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(timedOut.codes, [304]);
  assert.is(held.size, 0);
  assert.equal(gone.codes, [], 'a client that went away is not answered');
});

test('held polls: releaseAll answers every one with 304 (shutdown)', () => {
  const held = new HeldPolls(() => assert.unreachable('no change'));
  const replies = [fakeReply(), fakeReply(), fakeReply()];
  for (const r of replies) held.hold(heldPoll(r.reply), 10_000);
  held.releaseAll();
  assert.equal(
    replies.map((r) => r.codes),
    [[304], [304], [304]],
  );
  assert.is(held.size, 0);
});

test.run();
