/**
 * The protos' build descriptor (src/xds/proto-root.ts): read back, it encodes exactly as the
 * parsed .proto files do; one made from other protos (a changed roots.json or package) is ignored.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadProtos, loadRequestRoot, REQUEST_TYPES, writeProtoDescriptor } from '../../src/xds/proto-root.ts';
import { tempDir } from '../helpers/tree.ts';

const CLUSTER = {
  name: 'api',
  type: 'EDS',
  eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
  connect_timeout: { seconds: 2 },
  lb_policy: 'LEAST_REQUEST',
};

test('the descriptor encodes as the .proto files do; a stale one is not used', () => {
  const file = join(tempDir(), 'envoy.json');
  writeProtoDescriptor(file);
  const fromDescriptor = loadProtos(file);
  const fromProtos = loadProtos(join(tempDir(), 'absent.json'));
  assert.is(fromDescriptor.from, 'descriptor');
  assert.is(fromProtos.from, 'protos');
  const encode = (root: typeof fromProtos.root) => {
    const T = root.lookupType('envoy.config.cluster.v3.Cluster');
    return Buffer.from(T.encode(T.fromObject(CLUSTER)).finish()).toString('hex');
  };
  assert.is(encode(fromDescriptor.root), encode(fromProtos.root));
  assert.ok(encode(fromProtos.root).length > 20);

  const stale = JSON.parse(readFileSync(file, 'utf8'));
  stale.fingerprint = 'made from other protos';
  writeFileSync(file, JSON.stringify(stale));
  assert.is(loadProtos(file).from, 'protos');
});

// protobufjs's toJSON drops parsedOptions, where every protoc-gen-validate rule lives: a descriptor
// without them once loaded protos that validated nothing (a header name with CRLF reached Envoy).
test('the descriptor keeps every validation rule of the .proto files', () => {
  const file = join(tempDir(), 'envoy.json');
  writeProtoDescriptor(file);
  const fromDescriptor = loadProtos(file).root;
  const fromProtos = loadProtos(join(tempDir(), 'absent.json')).root;
  const field = (root: typeof fromProtos, message: string, name: string) =>
    root.lookupType(message).fields[name]!.parsedOptions as unknown;
  const headerName = field(fromProtos, 'envoy.config.route.v3.HeaderMatcher', 'name');
  assert.ok(JSON.stringify(headerName).includes('HTTP_HEADER_NAME'), 'the protos carry the rule');
  assert.equal(field(fromDescriptor, 'envoy.config.route.v3.HeaderMatcher', 'name'), headerName);
  let compared = 0;
  for (const name of [
    'envoy.config.cluster.v3.Cluster',
    'envoy.config.route.v3.Route',
    'envoy.config.listener.v3.Listener',
  ])
    for (const f of fromProtos.lookupType(name).fieldsArray) {
      assert.equal(fromDescriptor.lookupType(name).fields[f.name]!.parsedOptions, f.parsedOptions, `${name}.${f.name}`);
      if (f.parsedOptions) compared++;
    }
  assert.ok(compared > 20, `${compared} fields with rules compared`);

  const old = JSON.parse(readFileSync(file, 'utf8'));
  delete old.parsedOptions;
  writeFileSync(file, JSON.stringify(old));
  assert.is(loadProtos(file).from, 'protos', 'a descriptor written without the rules is not used');
});

// What Envoy and gRPC clients send, with every field whose type lives elsewhere in the API.
const REQUESTS = {
  'envoy.service.discovery.v3.DiscoveryRequest': {
    version_info: 'v1',
    node: {
      id: 'n1',
      cluster: 'c',
      metadata: { fields: { zone: { string_value: 'a' }, n: { list_value: { values: [{ number_value: 2 }] } } } },
      locality: { region: 'r', zone: 'z', sub_zone: 's' },
      user_agent_name: 'envoy',
      user_agent_build_version: { version: { major_number: 1, minor_number: 36 }, metadata: { fields: {} } },
      extensions: [{ name: 'e', category: 'c', type_urls: ['t'], version: { version: { major_number: 1 } } }],
      client_features: ['envoy.lb.does_not_support_overprovisioning'],
      listening_addresses: [{ socket_address: { address: '10.0.0.1', port_value: 80, protocol: 'UDP' } }],
    },
    resource_names: ['a', 'b'],
    resource_locators: [{ name: 'a', dynamic_parameters: { k: 'v' } }],
    type_url: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    response_nonce: '7',
    error_detail: { code: 3, message: 'bad', details: [{ type_url: 'x', value: Buffer.from([1, 2]) }] },
  },
  'envoy.service.discovery.v3.DeltaDiscoveryRequest': {
    node: { id: 'n1', dynamic_parameters: { k: { params: { a: 'b' } } } },
    type_url: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    resource_names_subscribe: ['a'],
    resource_names_unsubscribe: ['b'],
    resource_locators_subscribe: [{ name: 'a' }],
    initial_resource_versions: { a: '1' },
    response_nonce: '3',
    error_detail: { code: 9, message: 'no' },
  },
};

test('the request descriptor decodes every field of a request as the whole protos do; a stale one is not used', () => {
  const dir = tempDir();
  writeProtoDescriptor(join(dir, 'envoy.json'), join(dir, 'requests.json'));
  const requests = loadRequestRoot(join(dir, 'requests.json'))!;
  const whole = loadProtos(join(dir, 'envoy.json')).root;
  assert.ok(requests, 'the request descriptor loads');
  for (const name of REQUEST_TYPES) {
    const W = whole.lookupType(name);
    const bytes = W.encode(W.fromObject(REQUESTS[name])).finish();
    const R = requests.lookupType(name);
    const opts = { longs: String, enums: String, bytes: String, defaults: false };
    const decoded = R.toObject(R.decode(bytes), opts);
    assert.equal(decoded, W.toObject(W.decode(bytes), opts), name);
    assert.ok(JSON.stringify(decoded).length > 200, `${name}: the request is not empty`);
    assert.ok(R.root.lookup('envoy.config.cluster.v3.Cluster') === null, 'the API itself is not in it');
  }
  const stale = JSON.parse(readFileSync(join(dir, 'requests.json'), 'utf8'));
  stale.fingerprint = 'made from other protos';
  writeFileSync(join(dir, 'requests.json'), JSON.stringify(stale));
  assert.is(loadRequestRoot(join(dir, 'requests.json')), undefined);
});

test.run();
