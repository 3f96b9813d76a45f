/** Config-source rewriting: every ADS reference a served resource carries, pointed the way each transport fetches. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  grpcVariant,
  restVariant,
  retargetConfigSources,
  viewOf,
  xdsClusterName,
} from '../../src/snapshot/config-sources.ts';
import { ResourceEncoder } from '../../src/snapshot/encoder.ts';
import { makeTypeSnapshot } from '../../src/snapshot/group-snapshot.ts';

const ADS = { ads: {}, resource_api_version: 'V3' };
const edsCluster = (name: string, serviceName?: string) => ({
  name,
  type: 'EDS',
  eds_cluster_config: { eds_config: ADS, ...(serviceName ? { service_name: serviceName } : {}) },
});
const hcmListener = {
  name: 'l',
  filter_chains: [
    {
      filters: [{ name: 'hcm', typed_config: { rds: { route_config_name: 'routes-l', config_source: ADS } } }],
      transport_socket: {
        typed_config: {
          common_tls_context: { tls_certificate_sds_secret_configs: [{ name: 'cert', sds_config: ADS }] },
        },
      },
    },
  ],
};

const calls: string[] = [];
const marker = (kind: string, name: string) => {
  calls.push(`${kind}:${name}`);
  return { marker: `${kind}:${name}` };
};

const ROWS: [string, Record<string, unknown>, string[]][] = [
  ['EDS cluster: its own name', edsCluster('web'), ['endpoint:web']],
  ['EDS cluster: service_name wins', edsCluster('web', 'web-eds'), ['endpoint:web-eds']],
  ['a static cluster carries no reference', { name: 's', type: 'STATIC' }, []],
  ['listener: RDS and SDS references', hcmListener, ['route:routes-l', 'secret:cert']],
  ['a non-ADS source is left alone', { name: 'c', eds_cluster_config: { eds_config: { path: '/x' } } }, []],
];

for (const [name, json, want] of ROWS) {
  test(`rewrites ${name}`, () => {
    calls.length = 0;
    const before = JSON.stringify(json);
    const out = retargetConfigSources(json, marker);
    assert.equal(calls.sort(), [...want].sort());
    assert.is(JSON.stringify(json), before, 'the input is untouched');
    assert.not.ok(want.length && JSON.stringify(out).includes('"ads"'), 'no ADS reference is left');
  });
}

test('variants: per-type gRPC names the proxy cluster and protocol; REST carries its timing', () => {
  const sotw = grpcVariant('xds', false).sourceFor('endpoint', 'x') as { api_config_source: Record<string, unknown> };
  assert.is(sotw.api_config_source.api_type, 'GRPC');
  assert.equal(sotw.api_config_source.grpc_services, [{ envoy_grpc: { cluster_name: 'xds' } }]);
  assert.is((grpcVariant('xds', true).sourceFor('route', 'r') as typeof sotw).api_config_source.api_type, 'DELTA_GRPC');
  const rest = restVariant('ops_xds', { refreshDelayMs: 1500, requestTimeoutMs: 30_000 }).sourceFor(
    'endpoint',
    'x',
  ) as typeof sotw;
  assert.equal(rest.api_config_source.cluster_names, ['ops_xds']);
  assert.is(rest.api_config_source.refresh_delay, '1.5s');
  assert.is(rest.api_config_source.request_timeout, '30s');
  const short = restVariant('ops_xds', { refreshDelayMs: 1000 }).sourceFor('endpoint', 'x') as typeof sotw;
  assert.not.ok('request_timeout' in short.api_config_source, "without long polling, Envoy's default timeout");
});

const stated = (name: unknown) => ({ fleetxds: { xds_cluster: name } });
const CLUSTER_NAMES: [metadata: Record<string, unknown> | undefined, header: string | undefined, want: string][] = [
  [undefined, 'xds_cluster', 'xds_cluster'],
  [undefined, 'fleetxds.internal:grpc', 'fleetxds.internal:grpc'],
  // Envoy sends its cluster's name verbatim, whatever it is: a port or an @ in it included.
  [undefined, 'xds.example.com:21002', 'xds.example.com:21002'],
  [undefined, 'rest@dc1', 'rest@dc1'],
  // A space inside is a name Envoy takes; one at either end, or a control character, is not.
  [undefined, 'rest dc1', 'rest dc1'],
  [undefined, ' rest', 'fallback'],
  [undefined, 'rest ', 'fallback'],
  [undefined, 'a\tb', 'fallback'],
  [undefined, 'x'.repeat(256), 'fallback'],
  [undefined, 'x'.repeat(255), 'x'.repeat(255)],
  [undefined, undefined, 'fallback'],
  // What the node states wins over the header (an envoy_grpc.authority bootstrap sends another name).
  [stated('cp.example.com:21000'), 'fleetxds.example.com', 'cp.example.com:21000'],
  [stated(42), 'from-header', 'from-header'],
  [stated('rest dc1'), undefined, 'rest dc1'],
  [stated('bad\nname'), undefined, 'fallback'],
  [{ fleetxds: 'xds' }, 'from-header', 'from-header'],
];
for (const [metadata, header, want] of CLUSTER_NAMES) {
  test(`xdsClusterName(${JSON.stringify(metadata) ?? '-'}, ${JSON.stringify(header)?.slice(0, 24)}) -> ${want.slice(0, 24)}`, () => {
    assert.is(xdsClusterName(metadata, header, 'fallback'), want);
  });
}

test('a view re-encodes only resources that change, keeps versions, and is cached per variant', () => {
  const e = new ResourceEncoder();
  const t = makeTypeSnapshot('cluster', [
    e.encode('cluster', 'web', edsCluster('web')),
    e.encode('cluster', 's', { name: 's', type: 'STATIC' }),
  ]);
  const v = grpcVariant('xds', false);
  const view = viewOf(t, v);
  assert.is(view.version, t.version);
  assert.is(view.resources.get('s'), t.resources.get('s'), 'unchanged resource shared');
  assert.is.not(view.resources.get('web')!.any, t.resources.get('web')!.any, 'changed resource re-encoded');
  assert.is(view.resources.get('web')!.version, t.resources.get('web')!.version);
  assert.is(viewOf(t, grpcVariant('xds', false)), view, 'same variant key: the same view object');
  assert.is(viewOf(t, undefined), t, 'ADS: the snapshot itself');
  const routes = makeTypeSnapshot('route', []);
  assert.is(viewOf(routes, v), routes, 'types without references are not copied');
});

test.run();
