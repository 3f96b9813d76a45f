/**
 * What serving threads report, replayed on the main thread's registry (registry-relay.ts): each
 * call a stream makes has the same effect as if the stream lived in the main thread, and NACK
 * containment learns what the streams of other threads ACKed and NACKed.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ResourceEncoder } from '../../src/snapshot/encoder.ts';
import { makeTypeSnapshot } from '../../src/snapshot/group-snapshot.ts';
import { NodeRegistry, type StreamStatus } from '../../src/status/node-registry.ts';
import {
  RelayedAcks,
  RelayedStreams,
  RelayRegistry,
  type RelayedEvent,
} from '../../src/transports/grpc/registry-relay.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

const CDS = TypeUrls.cluster;
const INFO = {
  nodeId: 'n1',
  nodeCluster: 'c',
  group: 'edge',
  transport: 'grpc-ads',
  peer: 'p',
  userAgent: 'envoy',
  authenticated: true,
};

/** The same calls on a registry directly and through a relay give the same status. */
const CALLS: { what: string; run: (r: RelayRegistry | NodeRegistry, s: StreamStatus) => void }[] = [
  { what: 'sent', run: (r, s) => r.sent(s, CDS, 'v1', '1') },
  { what: 'acked', run: (r, s) => r.acked(s, CDS, 'v1') },
  { what: 'unchanged moves an ACKed client on', run: (r, s) => r.unchanged(s, CDS, 'v2') },
  { what: 'placed in another group and stage', run: (r, s) => r.placed(s, 'mesh', 'canary') },
  { what: 'nacked', run: (r, s) => r.nacked(s, CDS, 'v3', '2', 13, 'bad cluster') },
  { what: 'holding', run: (r, s) => r.holding(s, TypeUrls.listener, 'l1') },
];

/** A status without its ids and times (the relayed one is made a moment later). */
const timeless = (s: StreamStatus): unknown =>
  JSON.parse(JSON.stringify({ ...s, streamId: 0 }, (k, v) => (/At$|^at$/.test(k) ? undefined : v)));

test('every stream call relayed has the effect of the call made in the main thread', () => {
  const nacksDirect: string[] = [];
  const nacksRelayed: string[] = [];
  const direct = new NodeRegistry((n) => nacksDirect.push(n.message));
  const main = new NodeRegistry((n) => nacksRelayed.push(n.message));
  const posted: RelayedEvent[][] = [];
  const relay = new RelayRegistry((events) => posted.push(events));
  const replay = new RelayedStreams(main);
  const d = direct.open(INFO);
  const t = relay.open(INFO);
  for (const c of CALLS) {
    c.run(direct, d);
    c.run(relay, t);
    relay.flush();
    for (const events of posted.splice(0)) replay.apply(events);
    const [got] = main.connected();
    assert.equal(timeless(got!), timeless(d), `after ${c.what}`);
  }
  assert.equal(nacksRelayed, nacksDirect);
  relay.close(t);
  relay.flush();
  for (const events of posted.splice(0)) replay.apply(events);
  assert.is(main.connected().length, 0);
  assert.is(main.recentlyDisconnected()[0]!.nodeId, 'n1');
});

test('a thread that dies: its streams leave the status', () => {
  const main = new NodeRegistry();
  const replay = new RelayedStreams(main);
  replay.apply([
    ['open', 1, INFO],
    ['open', 2, { ...INFO, nodeId: 'n2' }],
  ]);
  assert.is(replay.size, 2);
  replay.closeAll();
  assert.is(main.connected().length, 0);
});

test('NACK containment across threads: a node on another thread is first served what the group ACKed', () => {
  const enc = new ResourceEncoder();
  const v1 = makeTypeSnapshot('cluster', [enc.encode('cluster', 'a', { name: 'a', type: 'STATIC' })]);
  const v2 = makeTypeSnapshot('cluster', [enc.encode('cluster', 'a', { name: 'a', type: 'STRICT_DNS' })]);
  const held = new Map([v1, v2].map((t) => [t.version, t]));
  const posted: RelayedEvent[][] = [];
  const threadA = new RelayedAcks(true, new RelayRegistry((e) => posted.push(e)), (_k, v) => held.get(v));
  const threadB = new RelayedAcks(true, new RelayRegistry(() => {}), (_k, v) => held.get(v));
  const replay = new RelayedStreams(new NodeRegistry());
  threadA.acked('edge', v1);
  threadA.nacked('edge', 'cluster', v2.version);
  (threadA as unknown as { relay: RelayRegistry }).relay.flush();
  for (const e of replay.apply(posted.flat())) threadB.learn(e);
  assert.is(threadB.firstServe('edge', 'cluster', v2), v1, 'the other thread serves the last ACKed version');
  assert.is(threadB.firstServe('mesh', 'cluster', v2), v2, 'other groups are not affected');
  const off = new RelayedAcks(false, new RelayRegistry((e) => posted.push(e)), () => undefined);
  posted.length = 0;
  off.nacked('edge', 'cluster', v2.version);
  assert.is(posted.length, 0, 'without the policy nothing is relayed');
});

test.run();
