/**
 * The delta stream (src/transports/delta-stream.ts) decides a push from the shared diff since what
 * the client was last brought to, not by walking every name it subscribes to. This test checks that
 * shortcut against the full walk: seeded random sequences of publishes, subscribes, unsubscribes,
 * wildcard switches, ACKs, NACKs and reconnects, and after every step the client, rebuilt from the
 * responses alone, holds exactly what a full walk of the current snapshot says it should (every
 * name it selects that exists, at its version, and nothing else), while every resource sent was
 * one it lacked or asked for again, and every removal named something it held or asked for.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emptyModel, type Model } from '../../src/model/types.ts';
import { ResourceEncoder, type EncodedResource } from '../../src/snapshot/encoder.ts';
import { makeGroupSnapshot } from '../../src/snapshot/group-snapshot.ts';
import { reconcile } from '../../src/snapshot/reconcile.ts';
import { makeRevision, revisionGroups } from '../../src/snapshot/revision.ts';
import { SnapshotCache, type PublishedConfig } from '../../src/snapshot/snapshot-cache.ts';
import { NodeRegistry } from '../../src/status/node-registry.ts';
import { DeltaStream, type DeltaRequest } from '../../src/transports/delta-stream.ts';
import { GroupAckTracker } from '../../src/transports/group-ack-tracker.ts';
import { lookupType } from '../../src/xds/proto-root.ts';
import { DELTA_DISCOVERY_RESPONSE, TypeUrls, kindOfTypeUrl } from '../../src/xds/resource-types.ts';
import { random } from '../helpers/random.ts';

const enc = new ResourceEncoder();
const Res = lookupType(DELTA_DISCOVERY_RESPONSE);
const MODEL = {
  ...emptyModel(),
  nodeGroups: [{ kind: 'NodeGroup', name: 'edge', match: { idPattern: 'edge-*' } }],
} as Model;
const NODE = { id: 'edge-1', cluster: 'edge', metadata: {} };
const KINDS = ['cluster', 'endpoint', 'listener'] as const;
type Kind = (typeof KINDS)[number];
const API_LISTENER = 'grpc-api'; // sent only to clients that name it, even under a wildcard

/** The served world: resource name -> a number that makes its version (absent: no such resource). */
type World = Record<Kind, Map<string, number>>;
const NAMES: Record<Kind, string[]> = {
  cluster: Array.from({ length: 12 }, (_, i) => `c${i}`),
  endpoint: Array.from({ length: 12 }, (_, i) => `c${i}`),
  listener: [...Array.from({ length: 4 }, (_, i) => `l${i}`), API_LISTENER],
};

function encode(kind: Kind, name: string, n: number): EncodedResource {
  if (kind === 'cluster')
    return enc.encode('cluster', name, {
      name,
      type: 'EDS',
      eds_cluster_config: { eds_config: { ads: {} } },
      connect_timeout: `${n}s`,
    });
  if (kind === 'endpoint')
    return enc.encode('endpoint', name, {
      cluster_name: name,
      endpoints: [
        { lb_endpoints: [{ endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: n } } } }] },
      ],
    });
  if (name === API_LISTENER)
    return enc.encode('listener', name, {
      name,
      stat_prefix: `api-${n}`,
      api_listener: { api_listener: { '@type': 'type.googleapis.com/google.protobuf.Empty' } },
    });
  return enc.encode('listener', name, {
    name,
    address: { socket_address: { address: '0.0.0.0', port_value: 8000 + n } },
  });
}

let versionId = 0;
function config(world: World, previous?: PublishedConfig): PublishedConfig {
  const list = KINDS.flatMap((k) => [...world[k]].map(([name, n]) => encode(k, name, n)));
  const id = ++versionId;
  const revision = makeRevision({
    id,
    modelHash: `m${id}`,
    treeHash: `t${id}`,
    appliedAt: '2026-11-25T00:00:00Z',
    model: MODEL,
    groups: revisionGroups(new Map([['edge', makeGroupSnapshot('edge', list)]])),
  });
  return reconcile({ revision, pins: new Map(), secrets: new Map() }, previous);
}

/** What the client asked for, kept by the client (not the server's Subscription). */
interface ClientSub {
  started: boolean;
  wildcard: boolean;
  names: Set<string>;
}

interface Decoded {
  kind: Kind;
  nonce: string;
  upserts: { name: string; version: string }[];
  removed: string[];
}

class Client {
  readonly held: Record<Kind, Map<string, string>> = { cluster: new Map(), endpoint: new Map(), listener: new Map() };
  readonly subs: Record<Kind, ClientSub> = {
    cluster: { started: false, wildcard: false, names: new Set() },
    endpoint: { started: false, wildcard: false, names: new Set() },
    listener: { started: false, wildcard: false, names: new Set() },
  };
  readonly lastNonce = new Map<Kind, string>();
  stream!: DeltaStream;
  private inbox: Decoded[] = [];
  private started = false;

  constructor(
    private readonly cache: SnapshotCache,
    private readonly registry: NodeRegistry,
    private readonly holdMs: number,
    private readonly acks?: GroupAckTracker,
  ) {
    this.open();
  }

  open(): void {
    this.started = false;
    this.stream = new DeltaStream({
      cache: this.cache,
      registry: this.registry,
      transport: 'test-delta',
      peer: 'test',
      warmingHoldMs: this.holdMs,
      acks: this.acks,
      send: (parts, flushed) => {
        const m = Res.decode(Buffer.concat(parts)) as unknown as {
          type_url: string;
          nonce: string;
          resources: { name: string; version: string }[];
          removed_resources: string[];
        };
        this.inbox.push({
          kind: kindOfTypeUrl(m.type_url) as Kind,
          nonce: m.nonce,
          upserts: m.resources.map((r) => ({ name: r.name, version: r.version })),
          removed: m.removed_resources,
        });
        flushed();
      },
    });
  }

  send(kind: Kind, req: DeltaRequest): void {
    const first = !this.started;
    this.started = true;
    this.stream.handle({ ...(first ? { node: NODE } : {}), type_url: TypeUrls[kind], ...req });
  }

  take(): Decoded[] {
    return this.inbox.splice(0);
  }
}

/** What a full walk says a client with `sub` should hold of `kind` in `world`. */
function desired(world: World, kind: Kind, sub: ClientSub): Map<string, string> {
  const out = new Map<string, string>();
  if (!sub.started) return out;
  for (const [name, n] of world[kind]) {
    const selected = sub.names.has(name) || (sub.wildcard && name !== API_LISTENER);
    if (selected) out.set(name, encode(kind, name, n).version);
  }
  return out;
}

/** Checks one step's responses against the client's state before it and applies them. */
function apply(client: Client, responses: Decoded[], forced: Record<Kind, Set<string>>, where: string): Set<Kind> {
  const answered = new Set<Kind>();
  // A cluster that changes must get its endpoints again, or Envoy leaves it warming (§4.7).
  const rewarm = new Set<string>();
  for (const r of responses) {
    answered.add(r.kind);
    client.lastNonce.set(r.kind, r.nonce);
    const held = client.held[r.kind];
    for (const u of r.upserts) {
      const asked = forced[r.kind].delete(u.name) || (r.kind === 'endpoint' && rewarm.delete(u.name));
      assert.ok(asked || held.get(u.name) !== u.version, `${where}: ${r.kind} ${u.name} sent again, unchanged`);
      if (r.kind === 'cluster' && held.has(u.name)) rewarm.add(u.name);
      held.set(u.name, u.version);
    }
    for (const n of r.removed) {
      const asked = forced[r.kind].delete(n);
      assert.ok(asked || held.has(n), `${where}: ${r.kind} ${n} removed, but the client did not hold it`);
      held.delete(n);
    }
  }
  return answered;
}

function checkHolds(client: Client, world: World, where: string): void {
  for (const kind of KINDS) {
    const want = desired(world, kind, client.subs[kind]);
    const got = client.held[kind];
    assert.equal(
      [...got].sort(([a], [b]) => (a < b ? -1 : 1)),
      [...want].sort(([a], [b]) => (a < b ? -1 : 1)),
      `${where}: what the client holds of ${kind}`,
    );
  }
}

/**
 * One random sequence; returns how many responses it checked. With `holdMs`, routes and listeners
 * wait for the endpoints of new clusters (warming-hold.ts), and the client subscribes to those
 * endpoints as Envoy does; each step then also waits out a hold that no subscription ends.
 */
async function walk(seed: number, steps: number, holdMs = 0): Promise<number> {
  const rnd = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const some = (xs: readonly string[]) => xs.filter(() => rnd() < 0.3);
  const world: World = { cluster: new Map(), endpoint: new Map(), listener: new Map() };
  for (const kind of KINDS)
    for (const name of NAMES[kind]) if (rnd() < 0.6) world[kind].set(name, 1 + (name.length % 3));
  const cache = new SnapshotCache();
  cache.publish(config(world));
  const client = new Client(cache, new NodeRegistry(), holdMs);
  let checked = 0;
  // What the steps since the last check asked for, which types they got responses of, which must answer.
  let forced: Record<Kind, Set<string>> = { cluster: new Set(), endpoint: new Set(), listener: new Set() };
  let answered = new Set<Kind>();
  let replyDue = new Set<Kind>();
  let holding = false; // a step left a hold running: the next steps' requests come during it

  for (let step = 0; step < steps; step++) {
    const where = `seed ${seed}, step ${step}`;
    const kind = pick(KINDS);
    const sub = client.subs[kind];
    const op = pick(['publish', 'publish', 'subscribe', 'unsubscribe', 'ack', 'ack', 'nack', 'wildcard', 'reconnect']);
    if (op === 'publish') {
      // A few resources of any type change, appear or go away.
      for (let i = 0; i < 1 + Math.floor(rnd() * 3); i++) {
        const k = pick(KINDS);
        const name = pick(NAMES[k]);
        if (world[k].has(name) && rnd() < 0.3) world[k].delete(name);
        else world[k].set(name, 1 + Math.floor(rnd() * 50));
      }
      cache.publish(config(world, cache.current));
    } else if (!sub.started) {
      // The type's first request: a wildcard (legacy empty or explicit) where allowed, or names.
      sub.started = true;
      if (kind !== 'endpoint' && rnd() < 0.7) {
        sub.wildcard = true;
        const named = kind === 'listener' && rnd() < 0.5 ? [API_LISTENER] : [];
        for (const n of named) {
          sub.names.add(n);
          forced[kind].add(n);
        }
        replyDue.add(kind);
        client.send(kind, rnd() < 0.5 && !named.length ? {} : { resource_names_subscribe: ['*', ...named] });
      } else {
        const names = some(NAMES[kind]);
        if (!names.length) names.push(pick(NAMES[kind])); // none would mean the wildcard
        for (const n of names) sub.names.add(n);
        if (kind === 'listener' && rnd() < 0.5) sub.names.add(API_LISTENER);
        for (const n of sub.names) forced[kind].add(n);
        client.send(kind, { resource_names_subscribe: [...sub.names] });
      }
    } else if (op === 'subscribe') {
      const names = [...some(NAMES[kind]), ...(rnd() < 0.2 ? ['no-such-thing'] : [])];
      for (const n of names) {
        sub.names.add(n);
        forced[kind].add(n); // answered even when held already or when it does not exist (DELTA-04, -05)
      }
      client.send(kind, { resource_names_subscribe: names, response_nonce: client.lastNonce.get(kind) });
    } else if (op === 'unsubscribe') {
      const names = some([...sub.names]);
      for (const n of names) {
        sub.names.delete(n);
        // Still covered by the wildcard: sent again (DELTA-06); a resource only sent by name is not
        // covered, but a missing one cannot be told from it, and may be said to be removed.
        if (sub.wildcard) forced[kind].add(n);
        if (!sub.wildcard || n === API_LISTENER) client.held[kind].delete(n);
      }
      client.send(kind, { resource_names_unsubscribe: names });
    } else if (op === 'wildcard' && kind !== 'endpoint') {
      if (sub.wildcard) {
        sub.wildcard = false;
        for (const n of [...client.held[kind].keys()]) if (!sub.names.has(n)) client.held[kind].delete(n);
        client.send(kind, { resource_names_unsubscribe: ['*'] });
      } else {
        sub.wildcard = true;
        replyDue.add(kind);
        client.send(kind, { resource_names_subscribe: ['*'] });
      }
    } else if (op === 'nack') {
      client.send(kind, {
        response_nonce: client.lastNonce.get(kind),
        error_detail: { code: 3, message: 'rejected by the test' },
      });
    } else if (op === 'reconnect') {
      // A new stream, every type reopened with what the client holds; one stale version claimed.
      client.stream.close();
      client.open();
      for (const k of KINDS) {
        const s = client.subs[k];
        if (!s.started) continue;
        if (!s.wildcard && !s.names.size) {
          s.started = false; // nothing to ask for: an empty first request would mean the wildcard
          continue;
        }
        const initial = Object.fromEntries(client.held[k]);
        const stale = [...client.held[k].keys()][0];
        if (stale && rnd() < 0.5) {
          initial[stale] = 'stale';
          client.held[k].set(stale, 'stale');
        }
        if (rnd() < 0.3) {
          initial['gone-away'] = 'v0'; // held from before, no longer exists: removed on connect
          client.held[k].set('gone-away', 'v0');
        }
        const names = [...(s.wildcard ? ['*'] : []), ...s.names];
        if (s.wildcard) replyDue.add(k);
        // Named ones the client does not hold yet are owed, like any new subscription.
        for (const n of s.names) if (!client.held[k].has(n)) forced[k].add(n);
        client.send(k, { resource_names_subscribe: names, initial_resource_versions: initial });
      }
    } else {
      client.send(kind, { response_nonce: client.lastNonce.get(kind) });
    }
    let mayHold = holding; // clusters were sent: listeners and routes may wait for their endpoints
    holding = false;
    for (;;) {
      const responses = client.take();
      if (!responses.length) {
        if (!mayHold) break;
        if (rnd() < 0.5 && step < steps - 1) {
          holding = true; // let it run into the next step
          break;
        }
        mayHold = false;
        await new Promise((resolve) => setTimeout(resolve, holdMs * 3)); // a hold nothing ends expires
        continue;
      }
      mayHold ||= holdMs > 0 && responses.some((r) => r.kind === 'cluster' && r.upserts.length > 0);
      checked += responses.length;
      for (const k of apply(client, responses, forced, `${where} (${op} ${kind})`)) answered.add(k);
      // Envoy asks for the endpoints of an EDS cluster it was just sent (here: at once, or not yet).
      const eds = client.subs.endpoint;
      const fresh = responses.flatMap((r) => (r.kind === 'cluster' ? r.upserts.map((u) => u.name) : []));
      const wanted = holdMs && eds.started && rnd() < 0.5 ? fresh.filter((n) => !eds.names.has(n)) : [];
      for (const n of wanted) {
        eds.names.add(n);
        forced.endpoint.add(n);
      }
      if (wanted.length) client.send('endpoint', { resource_names_subscribe: wanted });
    }
    if (holding) continue; // checked once the hold is over
    checkHolds(client, world, `${where} (${op} ${kind})`);
    for (const k of replyDue) assert.ok(answered.has(k), `${where}: a first wildcard request of ${k} is answered`);
    // Names asked for again that exist are sent, and those that do not are said to be removed.
    for (const k of KINDS)
      for (const n of forced[k])
        assert.ok(
          n === API_LISTENER && !client.subs[k].names.has(n),
          `${where}: ${k} ${n} was asked for and not answered`,
        );
    forced = { cluster: new Set(), endpoint: new Set(), listener: new Set() };
    answered = new Set();
    replyDue = new Set();
  }
  client.stream.close();
  return checked;
}

test('every step of random sequences matches the full walk', async () => {
  let responses = 0;
  for (let seed = 1; seed <= 60; seed++) responses += await walk(seed, 120);
  assert.ok(responses > 2000, `the sequences sent ${responses} responses: too few to mean much`);
});

test('and so with routes held while new clusters warm (ADS)', async () => {
  let responses = 0;
  for (let seed = 101; seed <= 120; seed++) responses += await walk(seed, 60, 2);
  assert.ok(responses > 300, `the sequences sent ${responses} responses: too few to mean much`);
});

test('a push after a one-resource change sends that resource alone, to a client subscribed to many', () => {
  const world: World = { cluster: new Map(), endpoint: new Map(), listener: new Map() };
  for (let i = 0; i < 500; i++) world.endpoint.set(`svc-${i}`, 1);
  const cache = new SnapshotCache();
  cache.publish(config(world));
  const client = new Client(cache, new NodeRegistry(), 0);
  client.subs.endpoint.started = true;
  client.send('endpoint', { resource_names_subscribe: [...world.endpoint.keys()] });
  apply(
    client,
    client.take(),
    { cluster: new Set(), endpoint: new Set(world.endpoint.keys()), listener: new Set() },
    'subscribe',
  );
  world.endpoint.set('svc-250', 2);
  cache.publish(config(world, cache.current));
  const pushed = client.take();
  assert.equal(
    pushed.map((r) => [r.kind, r.upserts.map((u) => u.name), r.removed]),
    [['endpoint', ['svc-250'], []]],
  );
  client.send('endpoint', { response_nonce: pushed[0]!.nonce });
  assert.equal(client.take(), [], 'the ACK needs no answer');
  client.stream.close();
});

test('a node served the version its group last ACKed (NACK containment) moves on by the diff from it', () => {
  const world: World = { cluster: new Map(), endpoint: new Map(), listener: new Map() };
  for (let i = 0; i < 6; i++) world.cluster.set(`c${i}`, 1);
  const cache = new SnapshotCache();
  cache.publish(config(world));
  const acks = new GroupAckTracker(true);
  const registry = new NodeRegistry();
  const none = { cluster: new Set<string>(), endpoint: new Set<string>(), listener: new Set<string>() };
  const open = () => {
    const c = new Client(cache, registry, 0, acks);
    c.subs.cluster.started = c.subs.cluster.wildcard = true;
    c.send('cluster', {});
    apply(c, c.take(), none, 'connect');
    return c;
  };
  const first = open();
  first.send('cluster', { response_nonce: first.lastNonce.get('cluster') }); // the group ACKs version 1
  const v1 = desired(world, 'cluster', first.subs.cluster);
  world.cluster.set('c1', 7); // version 2: c1 changed, c2 gone, c9 new
  world.cluster.delete('c2');
  world.cluster.set('c9', 1);
  cache.publish(config(world, cache.current));
  apply(first, first.take(), none, 'version 2');
  first.send('cluster', { response_nonce: first.lastNonce.get('cluster'), error_detail: { code: 3, message: 'no' } });

  const second = open(); // a node joining the group now is served version 1, which the group ACKed
  assert.equal(second.held.cluster, v1);
  world.cluster.set('c3', 4); // version 3: the pin lifts, the node moves by what differs from version 1
  world.cluster.delete('c4');
  cache.publish(config(world, cache.current));
  const moved = second.take();
  apply(second, moved, none, 'version 3');
  checkHolds(second, world, 'version 3');
  assert.equal(
    [moved.flatMap((r) => r.upserts.map((u) => u.name)).sort(), moved.flatMap((r) => r.removed).sort()],
    [
      ['c1', 'c3', 'c9'],
      ['c2', 'c4'],
    ],
  );
  first.stream.close();
  second.stream.close();
});

test.run();
