/**
 * Property tests of every parser of bytes a client or an operator's file sends, each against an
 * oracle: a reference library (protobufjs, yaml), a round trip, or a bound. Registration bodies
 * are sent to the running server in test/membership/registration-api.test.ts. A fixed seed in CI
 * (FLEETXDS_PROPERTY_SEED, FLEETXDS_PROPERTY_RUNS); `npm run soak` runs them longer with fresh seeds.
 */
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import YAML from 'yaml';
import { canonicalEndpoint } from '../../src/shared/addresses.ts';
import { loadPlainYaml } from '../../src/source/fast-yaml.ts';
import { MessageReader, MessageTooLarge } from '../../src/transports/grpc/message-reader.ts';
import { decodeSotwRequest } from '../../src/transports/grpc/requests.ts';
import { requestType } from '../../src/xds/proto-root.ts';
import { decodeToJson, encodeJson, parseTimestamp, timestampJson } from '../../src/xds/proto-json.ts';
import { DISCOVERY_REQUEST } from '../../src/xds/resource-types.ts';
import { DREQ, partitionField } from '../../src/xds/wire.ts';
import { buildVersionText } from '../../src/security/node-limits.ts';

const SEED = Number(process.env.FLEETXDS_PROPERTY_SEED ?? 20261127);
const RUNS = Number(process.env.FLEETXDS_PROPERTY_RUNS ?? 300);
const check = (p: fc.IPropertyWithHooks<unknown> | fc.IAsyncPropertyWithHooks<unknown>) =>
  fc.assert(p as fc.IProperty<unknown>, { seed: SEED, numRuns: RUNS });

const frame = (payload: Uint8Array, compressed = false) => {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
};

test('gRPC framing: messages cut anywhere into chunks come out whole, in order; a length past the limit is refused', () => {
  check(
    fc.property(
      fc.array(fc.record({ payload: fc.uint8Array({ maxLength: 300 }), compressed: fc.boolean() }), { maxLength: 12 }),
      fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 40 }),
      (messages, cuts) => {
        const bytes = Buffer.concat(messages.map((m) => frame(m.payload, m.compressed)));
        const reader = new MessageReader(300);
        const out: { payload: Buffer; compressed: boolean }[] = [];
        let at = 0;
        for (let i = 0; at < bytes.length; i++) {
          const n = cuts[i % cuts.length]!;
          out.push(...reader.push(bytes.subarray(at, at + n)));
          at += n;
        }
        assert.is(out.length, messages.length);
        out.forEach((m, i) => {
          assert.ok(Buffer.from(messages[i]!.payload).equals(m.payload));
          assert.is(m.compressed, messages[i]!.compressed);
        });
        assert.is(reader.pending, 0);
      },
    ),
  );
  check(
    fc.property(fc.integer({ min: 301, max: 2 ** 32 - 1 }), fc.uint8Array({ maxLength: 50 }), (length, rest) => {
      const head = Buffer.alloc(5);
      head.writeUInt32BE(length, 1);
      assert.throws(
        () => new MessageReader(300).push(Buffer.concat([head, rest])),
        (e: unknown) => e instanceof MessageTooLarge,
      );
    }),
  );
});

const Req = requestType(DISCOVERY_REQUEST);
const discoveryRequest = fc.record({
  version_info: fc.string({ maxLength: 20 }),
  resource_names: fc.array(fc.string({ maxLength: 30 }), { maxLength: 40 }),
  type_url: fc.constantFrom('type.googleapis.com/envoy.config.cluster.v3.Cluster', ''),
  response_nonce: fc.string({ maxLength: 10 }),
  node: fc.option(fc.record({ id: fc.string({ maxLength: 20 }), cluster: fc.string({ maxLength: 10 }) }), {
    nil: undefined,
  }),
});

test('DiscoveryRequest bytes: the partition by field and the decoder agree with protobufjs', () => {
  check(
    fc.property(discoveryRequest, (json) => {
      const bytes = Req.encode(Req.fromObject(json)).finish();
      const { rest, cut } = partitionField(bytes, DREQ.resourceNames);
      assert.is(rest.length + cut.length, bytes.length);
      const fromRest = Req.decode(rest) as unknown as { resource_names: string[]; version_info: string };
      assert.equal(fromRest.resource_names, []);
      assert.is(fromRest.version_info, json.version_info);
      const fromCut = Req.decode(cut) as unknown as { resource_names: string[] };
      assert.equal(fromCut.resource_names, json.resource_names);
      const decoded = decodeSotwRequest(Req, bytes, true, () => undefined);
      assert.equal(decoded.resource_names, json.resource_names);
      assert.is(decoded.type_url ?? '', json.type_url);
      assert.is(decoded.response_nonce ?? '', json.response_nonce);
    }),
  );
});

test('arbitrary bytes: the partition and the decoder return or throw an Error, never anything else', () => {
  check(
    fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      for (const run of [
        () => partitionField(bytes, DREQ.resourceNames),
        () => decodeSotwRequest(Req, bytes, true, () => undefined),
      ]) {
        try {
          run();
        } catch (err) {
          assert.ok(err instanceof Error, String(err));
        }
      }
    }),
  );
});

test('Timestamp: RFC 3339 in, the same instant out (seconds and non-negative nanos); anything else refused', () => {
  const instant = fc.record({
    seconds: fc.integer({ min: -62_135_596_800, max: 253_402_300_799 }),
    nanos: fc.integer({ min: 0, max: 999_999_999 }),
  });
  check(
    fc.property(instant, ({ seconds, nanos }) => {
      const text = timestampJson(seconds, nanos);
      assert.equal(parseTimestamp(text), { seconds, nanos });
      // The reference: Date reads the same instant to the millisecond.
      assert.is(Math.floor(Date.parse(text) / 1000), seconds);
    }),
  );
  check(
    fc.property(instant, fc.integer({ min: -1439, max: 1439 }), ({ seconds, nanos }, offsetMin) => {
      const local = new Date((seconds + offsetMin * 60) * 1000).toISOString().slice(0, 19);
      const sign = offsetMin < 0 ? '-' : '+';
      const a = Math.abs(offsetMin);
      const text = `${local}.${String(nanos).padStart(9, '0')}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
      const t = parseTimestamp(text);
      if (t) assert.equal(t, { seconds, nanos });
      else assert.ok(seconds + offsetMin * 60 < -62_135_596_800 || seconds + offsetMin * 60 > 253_402_300_799);
    }),
  );
  for (const bad of [
    '2026-11-27',
    'Nov 27 2026',
    '1e3',
    '2026-02-30T00:00:00Z',
    '2026-11-27T24:00:00Z',
    '2026-11-27T10:00:00',
  ])
    assert.is(parseTimestamp(bad), undefined, bad);
  const before1970 = encodeJson('google.protobuf.Timestamp', '1969-12-31T23:59:59.5Z');
  assert.equal(before1970.issues, []);
  check(
    fc.property(fc.string({ maxLength: 40 }), (text) => {
      const t = parseTimestamp(text);
      if (t) assert.ok(t.nanos >= 0 && t.nanos < 1e9 && Number.isInteger(t.seconds));
    }),
  );
});

/** Plain YAML documents: maps of simple keys to scalars, lists and maps. */
const key = fc.stringMatching(/^[a-z][a-zA-Z0-9_-]{0,11}$/);
const scalar = fc.oneof(
  fc.integer({ min: -1e9, max: 1e9 }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 20 }),
  fc.stringMatching(/^[a-z0-9.:/_-]{1,20}$/),
);
const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(key, tie('v'), { maxKeys: 4 }),
  ),
})).v;

test('the YAML fast path reads what yaml reads, or leaves the file to yaml', () => {
  let fast = 0;
  check(
    fc.property(
      fc.array(fc.dictionary(key, value, { minKeys: 1, maxKeys: 6 }), { minLength: 1, maxLength: 4 }),
      fc.boolean(),
      (docs, flow) => {
        const text = docs
          .map((d) => YAML.stringify(d, { collectionStyle: flow ? 'flow' : 'any', lineWidth: 0 }))
          .join('---\n');
        const ours = loadPlainYaml(text);
        if (!ours) return;
        fast++;
        const reference = YAML.parseAllDocuments(text).map((d) => d.toJS() as unknown);
        assert.equal(
          ours.map((d) => d.value),
          reference,
        );
      },
    ),
  );
  assert.ok(fast > RUNS / 2, `the fast path took ${fast} of ${RUNS} trees`);
});

test('endpoint addresses: every spelling of one endpoint is one key; the key is canonical; nothing throws', () => {
  const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
  check(
    fc.property(ipv4, fc.integer({ min: 1, max: 65535 }), fc.nat(3), (ip, port, zeros) => {
      const key = `${ip}:${port}`;
      const mapped = ip.split('.').map(Number);
      const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
      const spellings = [
        key,
        ...(zeros + String(port).length <= 5 ? [`${ip}:${'0'.repeat(zeros)}${port}`] : []),
        `[::ffff:${ip}]:${port}`,
        `[::FFFF:${hex(mapped[0]!, mapped[1]!)}:${hex(mapped[2]!, mapped[3]!)}]:${port}`,
      ];
      for (const s of spellings) {
        assert.is(canonicalEndpoint(s), key, s);
      }
      assert.is(canonicalEndpoint(key), key);
    }),
  );
  check(
    fc.property(fc.string({ maxLength: 60 }), (text) => {
      const c = canonicalEndpoint(text);
      if (c !== undefined) assert.is(canonicalEndpoint(c), c, 'canonical is a fixed point');
    }),
  );
});

test('proto3 JSON with PGV rules: any JSON gives bytes and the issues, never a throw; valid JSON round-trips', () => {
  const cluster = 'envoy.config.cluster.v3.Cluster';
  check(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (json) => {
      const r = encodeJson(cluster, json);
      assert.ok(r.bytes instanceof Uint8Array);
      assert.ok(Array.isArray(r.issues));
    }),
  );
  const valid = fc.record({
    name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
    connect_timeout: fc.integer({ min: 1, max: 3600 }).map((s) => `${s}s`),
    per_connection_buffer_limit_bytes: fc.integer({ min: 0, max: 2 ** 31 }),
    type: fc.constantFrom('STATIC', 'STRICT_DNS', 'LOGICAL_DNS', 'EDS'),
  });
  check(
    fc.property(valid, (json) => {
      const r = encodeJson(cluster, json);
      assert.equal(r.issues, []);
      const again = encodeJson(cluster, decodeToJson(cluster, r.bytes));
      assert.equal(again.issues, []);
      assert.ok(Buffer.from(again.bytes).equals(Buffer.from(r.bytes)), 'JSON -> bytes -> JSON -> the same bytes');
    }),
  );
});

test("a node's build version: any JSON gives a dotted triple of whole numbers or nothing, never a throw", () => {
  const whole = fc.integer({ min: 0, max: 2 ** 32 - 1 });
  fc.assert(
    fc.property(whole, whole, whole, fc.boolean(), (major, minor, patch, camel) => {
      const v = camel
        ? { majorNumber: major, minorNumber: minor, patch }
        : { major_number: major, minor_number: minor, patch };
      assert.is(buildVersionText({ version: v }), `${major}.${minor}.${patch}`);
    }),
  );
  fc.assert(
    fc.property(fc.anything(), (junk) => {
      const out = buildVersionText(junk);
      assert.ok(out === undefined || /^\d+\.\d+\.\d+$/.test(out), String(out));
      const nested = buildVersionText({ version: junk });
      assert.ok(nested === undefined || /^\d+\.\d+\.\d+$/.test(nested), String(nested));
    }),
  );
  assert.is(buildVersionText({ version: { major_number: 1.5 } }), undefined);
  assert.is(buildVersionText({ version: { major_number: -1 } }), undefined);
  assert.is(buildVersionText({ version: { major_number: 2 ** 40 } }), undefined);
});

test.run();
