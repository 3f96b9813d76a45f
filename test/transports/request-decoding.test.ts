/**
 * SotW requests (src/transports/grpc/requests.ts): names a request repeats byte for byte from the
 * stream's subscription are taken from it, not decoded; in every case the request the state
 * machine gets is the one a full decode gives. Table-driven: subscription and request in, checks out.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeSotwRequest } from '../../src/transports/grpc/requests.ts';
import { Subscription } from '../../src/transports/subscription.ts';
import { requestType } from '../../src/xds/proto-root.ts';
import { DISCOVERY_REQUEST, TypeUrls } from '../../src/xds/resource-types.ts';
import { DREQ } from '../../src/xds/wire.ts';

const Req = requestType(DISCOVERY_REQUEST);
const NAMES = Array.from({ length: 40 }, (_, i) => `svc-${i}.payments.example`);
const SHORT = Array.from({ length: 40 }, (_, i) => `s${i}`); // a request under the size that is scanned
const EDS = TypeUrls.endpoint;

interface Row {
  name: string;
  /** What the stream subscribes to now (a SotW request it sent before), if anything. */
  subscribed?: string[];
  request: Record<string, unknown>;
  /** Whether the names must come from the subscription (the same array, not decoded). */
  reused: boolean;
}

const ROWS: Row[] = [
  { name: 'an ACK repeating the names, in order', subscribed: NAMES, request: { resource_names: NAMES }, reused: true },
  {
    name: 'the same names in another order',
    subscribed: NAMES,
    request: { resource_names: [...NAMES].reverse() },
    reused: false,
  },
  { name: 'one name more', subscribed: NAMES, request: { resource_names: [...NAMES, 'svc-new'] }, reused: false },
  { name: 'one name fewer', subscribed: NAMES, request: { resource_names: NAMES.slice(1) }, reused: false },
  { name: 'the first request of the type', request: { resource_names: NAMES }, reused: false },
  { name: 'no names (unsubscribes all)', subscribed: NAMES, request: { resource_names: [] }, reused: false },
  {
    name: 'a few names: a set of its own',
    subscribed: ['a', 'b'],
    request: { resource_names: ['a', 'b'] },
    reused: false,
  },
  {
    name: 'a small request (short names): decoded whole',
    subscribed: SHORT,
    request: { resource_names: SHORT },
    reused: false,
  },
  {
    name: 'a NACK repeating the names',
    subscribed: NAMES,
    request: { resource_names: NAMES, error_detail: { code: 3, message: 'bad' } },
    reused: true,
  },
];

for (const row of ROWS) {
  test(row.name, () => {
    const sub = new Subscription(false);
    if (row.subscribed) sub.setSotw(row.subscribed);
    const json = { version_info: 'v1', type_url: EDS, response_nonce: '9', ...row.request };
    const bytes = Req.encode(Req.fromObject(json)).finish();
    const asked: string[] = [];
    const req = decodeSotwRequest(Req, bytes, false, (typeUrl) => {
      asked.push(typeUrl);
      return row.subscribed ? sub : undefined;
    });
    const full = Req.toObject(Req.decode(bytes), { defaults: true }) as Record<string, unknown>;
    assert.equal(req.resource_names, full.resource_names, 'the names a full decode gives');
    assert.is(req.version_info, 'v1');
    assert.is(req.type_url, EDS);
    assert.is(req.response_nonce, '9');
    assert.equal(req.error_detail, full.error_detail ? { code: 3, message: 'bad' } : null);
    assert.is(req.resource_names === sub.orderedNames(), row.reused, 'taken from the subscription');
    if (bytes.length >= 512 && (row.request.resource_names as string[]).length)
      assert.equal(asked, [EDS], 'looked up by type URL');
  });
}

test("the stream's own names encode as a request lists them", () => {
  const sub = new Subscription(false);
  sub.setSotw(NAMES);
  const encoded = Req.encode(Req.fromObject({ resource_names: NAMES })).finish();
  assert.ok(Buffer.from(encoded).equals(sub.encodedNames()!));
  assert.is(Req.fields.resource_names!.id, DREQ.resourceNames);
});

test.run();
