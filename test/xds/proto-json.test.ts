import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeToJson, encodeJson } from '../../src/xds/proto-json.ts';

const CLUSTER = 'envoy.config.cluster.v3.Cluster';
const VHOST = 'envoy.config.route.v3.VirtualHost';

test('well-known types round-trip through the binary encoding', () => {
  const json = {
    name: 'c',
    type: 'EDS',
    eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
    connect_timeout: '0.000000001s',
    lb_policy: 'RING_HASH',
    ring_hash_lb_config: { minimum_ring_size: '1024' },
    circuit_breakers: { thresholds: [{ max_connections: 0, max_retries: 3 }] },
    metadata: { filter_metadata: { fleetxds: { s: 'x', n: 1.5, b: false, l: [1, 'two', null, { k: true }], o: {} } } },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: { max_concurrent_streams: 100 } },
      },
    },
  };
  const { bytes, issues } = encodeJson(CLUSTER, json);
  assert.equal(issues, []);
  assert.equal(decodeToJson(CLUSTER, bytes), json);
});

test('unknown fields are reported, never dropped silently', () => {
  const { issues } = encodeJson(CLUSTER, {
    name: 'c',
    connect_timeout: '1s',
    conect_timeout: '1s',
    eds_cluster_config: { eds_config: { adss: {} } },
  });
  const unknown = issues.filter((i) => /unknown field/.test(i.message));
  assert.equal(unknown.map((i) => i.path).sort(), ['conect_timeout', 'eds_cluster_config.eds_config.adss']);
  // and the config source left with no member set is reported too
  assert.ok(issues.some((i) => i.path === 'eds_cluster_config.eds_config' && /is required/.test(i.message)));
});

test('lowerCamelCase JSON names are accepted like Envoy does', () => {
  const { issues, bytes } = encodeJson(CLUSTER, { name: 'c', connectTimeout: '2s', lbPolicy: 'RANDOM' });
  assert.equal(issues, []);
  assert.equal(decodeToJson(CLUSTER, bytes), { name: 'c', connect_timeout: '2s', lb_policy: 'RANDOM' });
});

test('type errors, enum names, oneofs and Any types are checked', () => {
  const { issues } = encodeJson(CLUSTER, {
    name: 7,
    type: 'EDS',
    cluster_type: { name: 'x' },
    lb_policy: 'FASTEST',
    connect_timeout: '5 seconds',
    transport_socket: { name: 't', typed_config: { '@type': 'type.googleapis.com/no.such.Type' } },
  });
  const byPath = Object.fromEntries(issues.map((i) => [i.path, i.message]));
  assert.match(byPath.name!, /expected a string/);
  assert.match(byPath.lb_policy!, /"FASTEST" is not a value of LbPolicy/);
  assert.match(byPath.connect_timeout!, /expected a duration/);
  assert.match(byPath['transport_socket.typed_config.@type']!, /unknown message type/);
  assert.ok(issues.some((i) => i.path === '' && /only one of type, cluster_type/.test(i.message)));
});

test('protoc-gen-validate rules: required fields, string length, numeric and duration bounds', () => {
  const { issues } = encodeJson('envoy.config.core.v3.HealthCheck', {
    interval: '0s',
    unhealthy_threshold: 1,
    http_health_check: { path: '' },
  });
  const byPath = Object.fromEntries(issues.map((i) => [i.path, i.message]));
  assert.is(byPath.timeout, 'is required');
  assert.match(byPath.interval!, /longer than 0s/);
  assert.is(byPath.healthy_threshold, 'is required');
  assert.match(byPath['http_health_check.path']!, /required|empty/);
});

test('oneof members are only validated when set', () => {
  const { issues } = encodeJson('envoy.config.route.v3.RouteMatch', { prefix: '/' });
  assert.equal(issues, []);
  const none = encodeJson('envoy.config.route.v3.RouteMatch', {});
  assert.ok(
    none.issues.some((i) => /one of prefix, path, safe_regex/.test(i.message)),
    JSON.stringify(none.issues),
  );
});

test('64-bit integers and out-of-range 32-bit values', () => {
  const r = encodeJson('envoy.config.cluster.v3.Cluster', { name: 'c', per_connection_buffer_limit_bytes: 4294967296 });
  assert.match(r.issues[0]!.message, /out of range/);
});

test('problems name their place: list items, map keys, inside an Any, and rules on list items', () => {
  const cases: [string, unknown, string, RegExp][] = [
    [CLUSTER, { name: 'c', health_checks: [{}, { timeout: 5 }] }, 'health_checks[1].timeout', /expected a duration/],
    [
      CLUSTER,
      { name: 'c', typed_extension_protocol_options: { 'a.b': 'x' } },
      'typed_extension_protocol_options["a.b"]',
      /expected an object with "@type"/,
    ],
    [
      CLUSTER,
      {
        name: 'c',
        transport_socket: {
          name: 't',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
            sni_x: 'a',
          },
        },
      },
      'transport_socket.typed_config.sni_x',
      /unknown field "sni_x"/,
    ],
    [VHOST, { name: 'v', domains: ['a', 7] }, 'domains[1]', /expected a string/],
    [VHOST, { name: 'v', domains: ['a', 'b\nc'] }, 'domains[1]', /not a valid HTTP header value/],
    [VHOST, { name: 'v', domains: [] }, 'domains', /at least 1 item/],
    [CLUSTER, { name: 'c', lb_policy: 'constructor' }, 'lb_policy', /is not a value of LbPolicy/],
  ];
  for (const [type, json, path, message] of cases) {
    const { issues } = encodeJson(type, json);
    const found = issues.find((i) => i.path === path);
    assert.ok(found && message.test(found.message), `${path}: ${JSON.stringify(issues)}`);
  }
});

test('a key whose value is undefined is no key, as in JSON', () => {
  const { issues, bytes } = encodeJson(CLUSTER, { name: 'c', connect_timeout: undefined, bogus: undefined });
  assert.equal(issues, []);
  assert.equal(decodeToJson(CLUSTER, bytes), { name: 'c' });
});

test.run();
