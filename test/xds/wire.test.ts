/**
 * The hand-assembled framing (src/xds/wire.ts) against protobufjs: a resource framed in one
 * allocation decodes, through the real protos, to the Any it was made of, at every varint width.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { framedAny, framedStoredAny } from '../../src/xds/wire.ts';
import { lookupType } from '../../src/xds/proto-root.ts';

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

test.run();
