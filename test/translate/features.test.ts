/**
 * What the features of the registry (src/features/registry.ts) add, as the builders call them
 * (src/translate/features.ts): the filters in Envoy's order, the per-filter configurations of each
 * feature merged, connection-manager fields, access logs, network filters, the services each calls.
 * Table-driven on listeners and overrides.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ListenerDoc, VirtualHostDoc } from '../../src/model/schema.ts';
import {
  connectionManagerFields,
  filterConfigs,
  httpFilters,
  BUILT_FEATURES,
  listenerAccessLogs,
  networkFilters,
  scopedVirtualHost,
} from '../../src/translate/features.ts';
import { featureServices } from '../../src/model/targets.ts';

const FAULT_VHOST = { name: 'f', domains: ['f'], routes: [{ to: 's', fault: { abort: { status: 503, percent: 1 } } }] };
const CORS_VHOST = { name: 'v', domains: ['*'], cors: { origins: ['https://a.example'] }, routes: [{ to: 's' }] };

const LISTENERS: { name: string; listener: object; vhosts: object[]; filters: string[]; services: string[] }[] = [
  { name: 'nothing', listener: {}, vhosts: [], filters: [], services: [] },
  {
    name: 'every feature',
    listener: {
      access: { deny: { addresses: ['10.0.0.0/8'] } },
      extAuth: { service: 'authz' },
      rateLimit: { requestsPerUnit: 10, unit: 'second' },
      rateLimitService: { service: 'rls', domain: 'edge' },
      compression: { algorithms: ['gzip', 'brotli'] },
      tracing: { zipkin: { service: 'zipkin' } },
      accessLog: [{ to: { service: 'als' } }],
    },
    vhosts: [CORS_VHOST, FAULT_VHOST],
    // Policy filters by extension config (ECDS), named after the listener.
    filters: [
      'envoy.filters.http.cors',
      'envoy.filters.http.rbac',
      'l/envoy.filters.http.ext_authz',
      'envoy.filters.http.local_ratelimit',
      'l/envoy.filters.http.ratelimit',
      'envoy.filters.http.compressor.gzip',
      'envoy.filters.http.compressor.brotli',
      'envoy.filters.http.fault',
    ],
    services: ['authz', 'rls', 'zipkin', 'als'],
  },
];

for (const c of LISTENERS)
  test(`a listener with ${c.name}: its filters in Envoy's order and the services they call`, () => {
    const l = { name: 'l', port: 8080, virtualHosts: ['v'], ...c.listener } as unknown as ListenerDoc;
    const vhosts = c.vhosts as never[];
    const built = httpFilters(l, vhosts);
    assert.equal(
      built.filters.map((f) => f.name),
      c.filters,
    );
    // Each discovered filter names its extension config, which carries the settings.
    const discovered = built.filters.filter((f) => f.config_discovery);
    assert.equal(
      built.extensions.map((e) => e.name),
      discovered.map((f) => f.name),
    );
    for (const [i, f] of discovered.entries()) {
      const typed = built.extensions[i]!.typed_config as { '@type': string };
      assert.equal((f.config_discovery as { type_urls: string[] }).type_urls, [typed['@type']]);
      assert.is(built.renamed.get((f.name as string).slice(2)), f.name);
    }
    assert.equal(featureServices(l), c.services);
  });

test('a virtual host seen by a listener that discovers its filters: per-route keys renamed, the rest shared', () => {
  const renamed = new Map([['envoy.filters.http.jwt_authn', 'edge/envoy.filters.http.jwt_authn']]);
  const plain = { name: 'p', routes: [{ name: 'r', typed_per_filter_config: { 'envoy.filters.http.cors': {} } }] };
  assert.is(scopedVirtualHost(plain, renamed), plain, 'nothing to rename: the same object');
  assert.is(scopedVirtualHost(plain, new Map()), plain);
  const untouched: { name: string; typed_per_filter_config?: object } = { name: 'u' };
  const vhost = {
    name: 'v',
    typed_per_filter_config: { 'envoy.filters.http.jwt_authn': { disabled: true } },
    routes: [untouched, { name: 'r', typed_per_filter_config: { 'envoy.filters.http.jwt_authn': { x: 1 } } }],
  };
  const seen = scopedVirtualHost(vhost, renamed) as typeof vhost;
  assert.equal(Object.keys(seen.typed_per_filter_config), ['edge/envoy.filters.http.jwt_authn']);
  assert.equal(Object.keys(seen.routes[1]!.typed_per_filter_config!), ['edge/envoy.filters.http.jwt_authn']);
  assert.is(seen.routes[0], untouched, 'a route without the filter keeps its object');
  assert.is(scopedVirtualHost(vhost, renamed), seen, 'one copy per virtual host and listener');
  assert.ok('envoy.filters.http.jwt_authn' in vhost.typed_per_filter_config, 'the shared build is untouched');
});

test('per-filter configurations: each feature adds its own entries, nothing set is nothing', () => {
  assert.is(filterConfigs({}, false), undefined);
  const off = filterConfigs({ access: false, cors: false, compression: false, extAuth: false, fault: false }, false)!;
  assert.equal(Object.keys(off), [
    'envoy.filters.http.cors',
    'envoy.filters.http.rbac',
    'envoy.filters.http.ext_authz',
    'envoy.filters.http.compressor.gzip',
    'envoy.filters.http.compressor.brotli',
    'envoy.filters.http.compressor.zstd',
    'envoy.filters.http.fault',
  ]);
  assert.equal(
    BUILT_FEATURES.map((f) => f.name),
    [
      'cors',
      'http-settings',
      'websocket',
      'protection',
      'compression',
      'fault',
      'tracing',
      'access-log',
      'mirror',
      'load-balancing',
      'locality',
      'health-check',
      'outlier-detection',
      'circuit-breaker',
      'expiry',
    ],
  );
});

test('connection-manager fields, access logs and network filters: each from its feature, none when unset', () => {
  const bare = { name: 'l', port: 8080, virtualHosts: ['v'] } as unknown as ListenerDoc;
  // An HTTP listener lists WebSocket upgrades (on by default) so its routes may turn them off.
  assert.equal(connectionManagerFields(bare, []), { upgrade_configs: [{ upgrade_type: 'websocket' }] });
  assert.equal(networkFilters(bare), []);
  assert.equal(listenerAccessLogs(bare, false), []);
  const l = {
    ...bare,
    tracing: { zipkin: { service: 'zipkin' } },
    accessLog: [{ to: 'stdout' }, { to: { service: 'als' } }],
  } as unknown as ListenerDoc;
  assert.equal(Object.keys(connectionManagerFields(l, [])), ['upgrade_configs', 'tracing']);
  // A virtual host that limits per client address: the connection's address, not x-forwarded-for.
  const perClient = {
    name: 'v',
    domains: ['*'],
    rateLimit: { requests: 10, per: '1s', by: 'clientAddress' },
    routes: [{ to: 's' }],
  } as unknown as VirtualHostDoc;
  assert.equal(Object.keys(connectionManagerFields(l, [perClient])), [
    'upgrade_configs',
    'use_remote_address',
    'tracing',
  ]);
  const tcp = { name: 't', port: 5432, tcp: { to: 'db' }, access: { allow: ['10.0.0.0/8'] } } as unknown as ListenerDoc;
  assert.equal(
    networkFilters(tcp).map((f) => f.name),
    ['envoy.filters.network.rbac'],
  );
  assert.equal(
    listenerAccessLogs(l, false).map((a) => a.name),
    ['envoy.access_loggers.stdout', 'envoy.access_loggers.http_grpc'],
  );
  assert.equal(
    listenerAccessLogs(l, true).map((a) => a.name),
    ['envoy.access_loggers.stdout', 'envoy.access_loggers.tcp_grpc'],
  );
});

test.run();
