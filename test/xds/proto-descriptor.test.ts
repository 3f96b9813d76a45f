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

test.run();
