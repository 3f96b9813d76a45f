/**
 * The hand-assembled framing (src/xds/wire.ts) against protobufjs: a resource framed in one
 * allocation decodes, through the real protos, to the Any it was made of, at every varint width;
 * a field cut out of a request leaves the others as protobufjs decodes them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  framedAny,
  framedStoredAny,
  partitionField,
  stringField,
  stringFieldThen,
  withoutField,
} from '../../src/xds/wire.ts';
import { lookupType } from '../../src/xds/proto-root.ts';
import { encodeJson } from '../../src/xds/proto-json.ts';

const TYPE_URL = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

test('a framed resource is a DiscoveryResponse resources field holding the Any of its concatenated parts', () => {
  const DR = lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  for (const size of [0, 1, 127, 128, 16_383, 16_384, 2_097_152]) {
    const whole = Buffer.alloc(size, 7);
    for (let i = 0; i < size; i += 997) whole[i] = i % 251;
    const pieces = [whole.subarray(0, size >> 2), whole.subarray(size >> 2, size >> 1), whole.subarray(size >> 1)];
    const { any, framed } = framedAny(TYPE_URL, pieces);
    const decoded = DR.toObject(DR.decode(framed)) as { resources: { type_url: string; value: Uint8Array }[] };
    assert.is(decoded.resources.length, 1, `${size}`);
    assert.is(decoded.resources[0]!.type_url, TYPE_URL);
    assert.ok(Buffer.from(decoded.resources[0]!.value).equals(whole), `${size}: the value is the parts in order`);
    assert.ok(framed.subarray(framed.length - any.length).equals(any), 'any is the tail of framed');
    assert.is(any.buffer, framed.buffer, 'any is a view, not a copy');
    const again = framedStoredAny(any);
    assert.ok(again.framed.equals(framed), `${size}: stored Any bytes frame to the same bytes`);
  }
});

test('stringFieldThen is the string field and the bytes after it, in one buffer, for any string', () => {
  const then = Buffer.from([0x32, 0x03, 0x0a, 0x01, 0x78]); // an encoded field 6 { 1: "x" }
  for (const s of ['', '7', '4294967296', 'ü€𝄞', 'n'.repeat(127), 'n'.repeat(128), 'n'.repeat(20_000)]) {
    const expected = Buffer.concat([stringField(5, s), then]);
    assert.ok(stringFieldThen(5, s, then).equals(expected), `${s.length} characters`);
    assert.ok(
      stringFieldThen(5, s, Buffer.alloc(0)).equals(stringField(5, s)),
      `${s.length} characters, nothing after`,
    );
  }
  // Read back as a DiscoveryResponse: nonce and control_plane, whichever order they come in.
  const DR = lookupType('envoy.service.discovery.v3.DiscoveryResponse');
  const decoded = DR.toObject(DR.decode(stringFieldThen(5, '42', then))) as Record<string, unknown>;
  assert.equal(decoded, { nonce: '42', control_plane: { identifier: 'x' } });
});

const REQ = 'envoy.service.discovery.v3.DiscoveryRequest';
const NODE = { id: 'n1', cluster: 'c', metadata: { zone: 'z' }, extensions: [{ name: 'envoy.x', category: 'y' }] };
const bytesOf = (json: Record<string, unknown>) => Buffer.from(encodeJson(REQ, json).bytes);

test('withoutField cuts every occurrence of one top-level field and keeps the rest byte for byte', () => {
  const Req = lookupType(REQ);
  const rest = { version_info: 'v1', resource_names: ['a', 'b'.repeat(300)], type_url: TYPE_URL, response_nonce: '7' };
  const node = bytesOf({ node: NODE });
  const withoutNode = bytesOf(rest);
  const cases: { name: string; message: Buffer; expect: Buffer }[] = [
    { name: 'node after version_info (as encoded)', message: bytesOf({ ...rest, node: NODE }), expect: withoutNode },
    { name: 'node last', message: Buffer.concat([withoutNode, node]), expect: withoutNode },
    {
      name: 'node in the middle',
      message: Buffer.concat([
        bytesOf({ version_info: 'v1' }),
        node,
        bytesOf({ resource_names: rest.resource_names, type_url: TYPE_URL, response_nonce: '7' }),
      ]),
      expect: withoutNode,
    },
    {
      name: 'node twice (protobuf merges them)',
      message: Buffer.concat([node, withoutNode, node]),
      expect: withoutNode,
    },
    { name: 'only the node', message: node, expect: Buffer.alloc(0) },
    { name: 'no node', message: withoutNode, expect: withoutNode },
    { name: 'empty message', message: Buffer.alloc(0), expect: Buffer.alloc(0) },
    {
      name: 'an unknown field and a fixed64 kept',
      message: Buffer.concat([Buffer.from([0x79, 1, 2, 3, 4, 5, 6, 7, 8]), node]),
      expect: Buffer.from([0x79, 1, 2, 3, 4, 5, 6, 7, 8]),
    },
  ];
  for (const c of cases) {
    const cut = Buffer.from(withoutField(c.message, 2));
    assert.ok(cut.equals(c.expect), c.name);
    assert.equal(Req.toObject(Req.decode(cut)), Req.toObject(Req.decode(c.expect)), c.name);
  }
  assert.is(withoutField(withoutNode, 2), withoutNode, 'nothing to cut: the same bytes, not a copy');
});

test('partitionField: the rest and the cut occurrences, each byte for byte, in one piece when in one run', () => {
  const names = ['a', 'b'.repeat(300), 'c'];
  const namesOnly = bytesOf({ resource_names: names });
  const others = bytesOf({ version_info: 'v1', type_url: TYPE_URL, response_nonce: '7' });
  const encoded = bytesOf({ version_info: 'v1', resource_names: names, type_url: TYPE_URL, response_nonce: '7' });
  const one = partitionField(encoded, 3);
  assert.ok(Buffer.from(one.rest).equals(others), 'the rest');
  assert.ok(Buffer.from(one.cut).equals(namesOnly), 'the names, in order');
  assert.is(one.cut.buffer, encoded.buffer, 'one run: a view of the message, not a copy');
  // Names split around other fields (protobuf allows it): the cut joins them in order.
  const split = Buffer.concat([bytesOf({ resource_names: ['a'] }), others, bytesOf({ resource_names: ['b', 'c'] })]);
  const two = partitionField(split, 3);
  assert.ok(Buffer.from(two.rest).equals(others));
  assert.ok(Buffer.from(two.cut).equals(bytesOf({ resource_names: ['a', 'b', 'c'] })));
  const none = partitionField(others, 3);
  assert.is(none.rest, others, 'nothing to cut: the same bytes');
  assert.is(none.cut.length, 0);
  assert.is(partitionField(namesOnly, 3).rest.length, 0, 'only the field');
});

test('withoutField refuses a truncated message as protobufjs does', () => {
  const whole = bytesOf({ node: NODE, type_url: TYPE_URL });
  for (const end of [1, 5, whole.length - 1]) {
    assert.throws(() => withoutField(whole.subarray(0, end), 2), /index out of range/, `cut at ${end}`);
  }
  assert.throws(() => withoutField(Buffer.from([0x0b, 0x00]), 2), undefined, 'a group start without its end');
});

test.run();
