/**
 * The protos' build descriptor (src/xds/proto-root.ts): read back, it encodes exactly as the
 * parsed .proto files do; one made from other protos (a changed roots.json or package) is ignored.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadProtos, writeProtoDescriptor } from '../../src/xds/proto-root.ts';
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

test.run();
