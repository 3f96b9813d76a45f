/**
 * The registered endpoint state machine, table-driven (effectiveState), and Membership's
 * bookkeeping: a heartbeat that changes nothing reports nothing; TTLs, drains and removals are
 * reported once; a restore gives each endpoint a fresh TTL; policy refusals.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { effectiveState, MAX_PER_SERVICE, Membership } from '../../src/membership/membership.ts';
import type { RegistrationDoc } from '../../src/model/schema.ts';
import { FleetError } from '../../src/shared/errors.ts';
import { openStores } from '../../src/store/database.ts';
import { tempDir } from '../helpers/tree.ts';

test('effectiveState: healthy, unhealthy after a TTL of silence, gone after two; draining until its time', () => {
  const ttl = 1000;
  const cases: [string, Parameters<typeof effectiveState>[0], number, string][] = [
    ['fresh healthy', { health: 'healthy', lastSeen: 0 }, 999, 'healthy'],
    ['reported unhealthy', { health: 'unhealthy', lastSeen: 0 }, 10, 'unhealthy'],
    ['silent for a TTL', { health: 'healthy', lastSeen: 0 }, 1000, 'unhealthy'],
    ['silent for two TTLs', { health: 'healthy', lastSeen: 0 }, 2000, 'gone'],
    ['draining before its time', { health: 'draining', lastSeen: 0, drainUntil: 5000 }, 4999, 'draining'],
    [
      'draining, silent (heartbeats do not matter)',
      { health: 'draining', lastSeen: 0, drainUntil: 5000 },
      3000,
      'draining',
    ],
    ['drained', { health: 'draining', lastSeen: 0, drainUntil: 5000 }, 5000, 'gone'],
  ];
  for (const [what, e, now, want] of cases) assert.is(effectiveState(e, now, ttl), want, what);
});

function setup(policy: RegistrationDoc = { tokens: ['a'.repeat(64)], ttl: '1s', drain: '2s' }) {
  let now = 1_000_000;
  const stores = openStores(`${tempDir()}/m.db`);
  const changes: string[][] = [];
  const make = () =>
    new Membership(
      (s) => (s === 'app' ? policy : undefined),
      (services) => changes.push([...services]),
      stores.registrations,
      () => now,
    );
  return { m: make(), make, changes, advance: (ms: number) => (now += ms), stores };
}

test('heartbeats that change nothing report nothing; a TTL, a drain and a removal each report once', () => {
  const { m, changes, advance } = setup();
  m.heartbeat('app', { address: '10.0.0.1:80' }, 'vm-1');
  assert.equal(changes, [['app']], 'joined');
  for (let i = 0; i < 5; i++) {
    advance(300);
    m.heartbeat('app', { address: '10.0.0.1:80' }, 'vm-1');
    m.sweep();
  }
  assert.is(changes.length, 1, 'heartbeats alone: no change');
  m.heartbeat('app', { address: '10.0.0.1:80', health: 'unhealthy' }, 'vm-1');
  assert.is(changes.length, 2, 'its check failed');
  assert.is(m.members('app')[0]!.health, 'unhealthy');
  m.heartbeat('app', { address: '10.0.0.1:80' }, 'vm-1');
  advance(1000);
  m.sweep();
  assert.is(m.members('app')[0]!.health, 'unhealthy', 'silent for a TTL');
  assert.is(changes.length, 4);
  advance(1000);
  m.sweep();
  assert.equal(m.members('app'), [], 'silent for two TTLs: removed');
  assert.is(changes.length, 5);
  m.heartbeat('app', { address: '10.0.0.2:80' }, 'vm-2');
  m.drain('app', '10.0.0.2:80', 'vm-2');
  m.heartbeat('app', { address: '10.0.0.2:80' }, 'vm-2');
  assert.is(m.members('app')[0]!.health, 'draining', 'a heartbeat does not undo a drain');
  advance(2000);
  m.sweep();
  assert.equal(m.members('app'), [], 'drained');
});

test('a restore gives every stored endpoint a fresh TTL', () => {
  const { m, make, advance } = setup();
  m.heartbeat('app', { address: '10.0.0.1:80', zone: 'a' }, 'vm-1');
  advance(900);
  const again = make();
  again.restore();
  advance(900); // 1.8 s after the last heartbeat, 0.9 s after the restore
  again.sweep();
  assert.equal(again.members('app'), [{ address: '10.0.0.1:80', zone: 'a', health: 'healthy' }]);
});

test('refusals: no policy, a token or name it does not list, an address or port outside it', () => {
  const { m } = setup({ identities: ['spiffe://corp/app/*'], addresses: ['10.0.0.0/8'], ports: [80], ttl: '1s' });
  const code = (fn: () => unknown) => {
    try {
      fn();
      return 'ok';
    } catch (err) {
      return (err as FleetError).code;
    }
  };
  assert.is(
    code(() => m.authorize('other', { certificateNames: [] })),
    'FXDS_NOT_REGISTERED',
  );
  assert.is(
    code(() => m.authorize('app', { certificateNames: ['spiffe://corp/db/x'] })),
    'FXDS_FORBIDDEN',
  );
  assert.is(m.authorize('app', { certificateNames: ['spiffe://corp/app/vm-1'] }), 'spiffe://corp/app/vm-1');
  assert.is(
    code(() => m.heartbeat('app', { address: '192.168.0.1:80' }, 'x')),
    'FXDS_FORBIDDEN',
  );
  assert.is(
    code(() => m.heartbeat('app', { address: '10.0.0.1:81' }, 'x')),
    'FXDS_FORBIDDEN',
  );
  assert.is(
    code(() => m.heartbeat('app', { address: 'host:80' }, 'x')),
    'FXDS_BAD_REQUEST',
  );
  assert.is(
    code(() => m.heartbeat('app', { address: '10.9.9.9:80' }, 'x')),
    'ok',
  );
});

test('a service takes at most MAX_PER_SERVICE endpoints; heartbeats of those it has still pass', () => {
  const { m } = setup({ tokens: ['a'.repeat(64)], ttl: '1h' });
  for (let i = 0; i < MAX_PER_SERVICE; i++)
    m.heartbeat('app', { address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}:80` }, 'vm');
  let refused = '';
  try {
    m.heartbeat('app', { address: '10.200.0.1:80' }, 'vm');
  } catch (err) {
    refused = (err as FleetError).message;
  }
  assert.match(refused, /has 10000 registered endpoints, the most one service takes/);
  assert.is(m.heartbeat('app', { address: '10.0.0.7:80' }, 'vm'), 'healthy');
  assert.is(m.members('app').length, MAX_PER_SERVICE);
});

const refusal = (fn: () => unknown): string => {
  try {
    fn();
    return 'ok';
  } catch (err) {
    return `${(err as FleetError).code}: ${(err as FleetError).message}`;
  }
};

test('loopback, unspecified, link-local, multicast and broadcast addresses are refused unless the policy names them', () => {
  const open = setup({ tokens: ['a'.repeat(64)] }).m;
  const cases: [string, RegExp | 'ok'][] = [
    ['127.0.0.1:9901', /loopback address/],
    ['0.0.0.0:80', /unspecified address/],
    ['[::]:80', /unspecified address/],
    ['[::1]:80', /loopback address/],
    ['[0:0::1]:80', /loopback address/],
    ['[::ffff:127.0.0.1]:80', /loopback address/],
    ['169.254.169.254:80', /link-local address \(cloud metadata/],
    ['[fd00:ec2::254]:80', /cloud metadata address/],
    ['255.255.255.255:80', /reserved or broadcast address/],
    ['224.0.0.1:80', /multicast address/],
    ['[fe80::1]:80', /link-local address/],
    ['[ff02::1]:80', /multicast address/],
    ['10.0.0.5:80', 'ok'],
    ['[2001:db8::5]:80', 'ok'],
  ];
  for (const [address, want] of cases) {
    const got = refusal(() => open.heartbeat('app', { address }, 'vm'));
    if (want === 'ok') assert.is(got, 'ok', address);
    else assert.match(got, want, `${address}: ${got}`);
    if (want !== 'ok') assert.match(got, /^FXDS_FORBIDDEN/, address);
  }
  // A block within the range names it; 0.0.0.0/0 does not.
  const named = setup({ tokens: ['a'.repeat(64)], addresses: ['127.0.0.0/8', '10.0.0.0/8'] }).m;
  assert.is(
    refusal(() => named.heartbeat('app', { address: '127.0.0.1:8080' }, 'vm')),
    'ok',
  );
  const wide = setup({ tokens: ['a'.repeat(64)], addresses: ['0.0.0.0/0'] }).m;
  assert.match(
    refusal(() => wide.heartbeat('app', { address: '127.0.0.1:8080' }, 'vm')),
    /loopback/,
  );
});

test('ownAddress: the endpoint must be the connection address or a certificate IP of the caller', () => {
  const { m } = setup({ tokens: ['a'.repeat(64)], ownAddress: true });
  const from = { peer: '::ffff:10.0.4.21', certificateIps: ['10.0.9.9'] };
  assert.is(
    refusal(() => m.heartbeat('app', { address: '10.0.4.21:80' }, 'vm', from)),
    'ok',
  );
  assert.is(
    refusal(() => m.heartbeat('app', { address: '10.0.9.9:80' }, 'vm', from)),
    'ok',
  );
  assert.match(
    refusal(() => m.heartbeat('app', { address: '10.0.4.22:80' }, 'vm', from)),
    /caller's own address/,
  );
  assert.match(
    refusal(() => m.heartbeat('app', { address: '10.0.4.21:80' }, 'vm')),
    /caller's own address/,
  );
});

test('an endpoint belongs to the identity that registered it, unless instances manage each other', () => {
  const { m } = setup({ tokens: ['a'.repeat(64)], ttl: '1h' });
  m.heartbeat('app', { address: '10.0.0.1:80' }, 'vm-1');
  const other = /FXDS_FORBIDDEN: 10.0.0.1:80 in service "app" was registered by another identity/;
  assert.match(
    refusal(() => m.heartbeat('app', { address: '10.0.0.1:80', weight: 1_000_000 }, 'vm-2')),
    other,
  );
  assert.match(
    refusal(() => m.drain('app', '10.0.0.1:80', 'vm-2')),
    other,
  );
  assert.match(
    refusal(() => m.deregister('app', '10.0.0.1:80', 'vm-2')),
    other,
  );
  assert.equal(m.members('app'), [{ address: '10.0.0.1:80', health: 'healthy' }]);
  assert.is(
    refusal(() => m.drain('app', '10.0.0.1:80', 'vm-1')),
    'ok',
  );
  const shared = setup({ tokens: ['a'.repeat(64)], ttl: '1h', manageEachOther: true }).m;
  shared.heartbeat('app', { address: '10.0.0.1:80' }, 'vm-1');
  assert.is(
    refusal(() => shared.drain('app', '10.0.0.1:80', 'vm-2')),
    'ok',
  );
});

test('one endpoint, one key: addresses are canonical before they are keys', () => {
  const { m, stores } = setup({ tokens: ['a'.repeat(64)], ttl: '1h' });
  m.heartbeat('app', { address: '10.0.4.21:8080' }, 'vm');
  m.heartbeat('app', { address: '10.0.4.21:08080' }, 'vm');
  m.heartbeat('app', { address: '[::ffff:10.0.4.22]:80' }, 'vm');
  m.heartbeat('app', { address: '10.0.4.22:80' }, 'vm');
  m.heartbeat('app', { address: '[2001:DB8:0:0::1]:80' }, 'vm');
  assert.equal(
    m.members('app').map((e) => e.address),
    ['10.0.4.21:8080', '10.0.4.22:80', '[2001:db8::1]:80'],
  );
  m.drain('app', '[::ffff:10.0.4.22]:080', 'vm');
  assert.is(m.members('app').find((e) => e.address === '10.0.4.22:80')!.health, 'draining');
  // Removed under another spelling: gone from the store too, not only from memory.
  m.deregister('app', '10.0.4.21:08080', 'vm');
  assert.not.ok(stores.registrations.list().some((r) => r.address === '10.0.4.21:8080'));
  assert.not.ok(m.members('app').some((e) => e.address === '10.0.4.21:8080'));
});

test('after a restart, a change the shared store lacks (newer here) is written back to it', () => {
  const { m, advance } = setup({ tokens: ['a'.repeat(64)], ttl: '1h', drain: '1h' });
  m.heartbeat('app', { address: '10.0.0.1:80' }, 'vm');
  const row = { ...m.list()[0]! };
  advance(10);
  m.drain('app', '10.0.0.1:80', 'vm');
  const told: string[] = [];
  m.observer = {
    changed: (e) => told.push(`${e.address} ${e.health}`),
    removed: () => {},
    seen: () => {},
    flush: () => Promise.resolve(true),
  };
  // The store still has the entry as it was before the drain.
  m.merge([row], 1000);
  assert.equal(told, ['10.0.0.1:80 draining']);
  assert.is(m.members('app')[0]!.health, 'draining', 'and the newer state is kept here');
});

test.run();
