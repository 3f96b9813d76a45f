/**
 * Hand-assembled protobuf framing for the few envelope messages we send many times
 * (DiscoveryResponse, DeltaDiscoveryResponse, Resource, Any). Resources are encoded once and their
 * framed bytes are concatenated into each response, never re-encoded per client.
 */
import protobuf from 'protobufjs';

const LEN = 2;

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    size++;
    n = Math.floor(n / 128);
  }
  return size;
}

function writeVarint(out: Buffer, pos: number, n: number): number {
  while (n > 0x7f) {
    out[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos++] = n;
  return pos;
}

/** How many bytes the tag and length of a length-delimited field take. */
function headerSize(field: number, length: number): number {
  return varintSize((field << 3) | LEN) + varintSize(length);
}

/** Writes the tag and length of a length-delimited field at `pos`; returns where its payload goes. */
function writeHeader(out: Buffer, pos: number, field: number, length: number): number {
  return writeVarint(out, writeVarint(out, pos, (field << 3) | LEN), length);
}

/** Tag + length + payload of a length-delimited field, in one allocation (called per resource). */
export function lenField(field: number, payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(headerSize(field, payload.length) + payload.length);
  out.set(payload, writeHeader(out, 0, field, payload.length));
  return out;
}

/** google.protobuf.Any { type_url = 1; value = 2; } */
const ANY = { typeUrl: 1, value: 2 } as const;

/**
 * A resource as a DiscoveryResponse's `resources` field: Any { type_url, value } whose value is the
 * concatenation of `value` (a message and its parts), built in one allocation; `any` is a view of
 * it, so a large route configuration is not copied once for the value, once for the Any and once for
 * the field.
 */
export function framedAny(typeUrl: string, value: readonly Uint8Array[]): { any: Buffer; framed: Buffer } {
  const url = Buffer.from(typeUrl, 'utf8');
  let valueLength = 0;
  for (const v of value) valueLength += v.length;
  const anyLength = headerSize(ANY.typeUrl, url.length) + url.length + headerSize(ANY.value, valueLength) + valueLength;
  const framed = Buffer.allocUnsafe(headerSize(DR.resources, anyLength) + anyLength);
  const anyStart = writeHeader(framed, 0, DR.resources, anyLength);
  let pos = writeHeader(framed, anyStart, ANY.typeUrl, url.length);
  pos += url.copy(framed, pos);
  pos = writeHeader(framed, pos, ANY.value, valueLength);
  for (const v of value) {
    framed.set(v, pos);
    pos += v.length;
  }
  return { framed, any: framed.subarray(anyStart) };
}

/** Stored Any bytes framed as a DiscoveryResponse's `resources` field; `any` is a view of it. */
export function framedStoredAny(stored: Uint8Array): { any: Buffer; framed: Buffer } {
  const framed = lenField(DR.resources, stored);
  return { framed, any: framed.subarray(framed.length - stored.length) };
}

export function stringField(field: number, s: string): Buffer {
  return s === '' ? Buffer.alloc(0) : lenField(field, Buffer.from(s, 'utf8'));
}

/**
 * A string field followed by fields already encoded, in one allocation: the few bytes of a
 * response that differ per stream (its nonce, then its control_plane), made once per push per stream.
 */
export function stringFieldThen(field: number, s: string, then: Uint8Array): Buffer {
  const length = Buffer.byteLength(s, 'utf8');
  const out = Buffer.allocUnsafe((length ? headerSize(field, length) + length : 0) + then.length);
  let pos = 0;
  if (length) {
    pos = writeHeader(out, 0, field, length);
    pos += out.write(s, pos, 'utf8');
  }
  out.set(then, pos);
  return out;
}

/** google.protobuf.Any, in two copies (framedAny is the one-allocation form resources use). */
export function encodeAny(typeUrl: string, value: Uint8Array): Buffer {
  return Buffer.concat([stringField(ANY.typeUrl, typeUrl), lenField(ANY.value, value)]);
}

// DiscoveryResponse: version_info=1, resources=2, type_url=4, nonce=5
export const DR = { versionInfo: 1, resources: 2, typeUrl: 4, nonce: 5, controlPlane: 6 } as const;
// DiscoveryRequest: resource_names=3 (what a request repeats; see Subscription.encodedNames)
export const DREQ = { resourceNames: 3 } as const;
// DeltaDiscoveryResponse: system_version_info=1, resources=2, type_url=4, nonce=5, removed_resources=6
export const DDR = {
  systemVersionInfo: 1,
  resources: 2,
  typeUrl: 4,
  nonce: 5,
  removedResources: 6,
  controlPlane: 7,
} as const;
// Resource: version=1, resource=2, name=3, ttl=6
export const RES = { version: 1, resource: 2, name: 3, ttl: 6 } as const;

/** The type URL of the Resource wrapper (a SotW response wraps a resource in it to give it a TTL). */
export const RESOURCE_WRAPPER_URL = 'type.googleapis.com/envoy.service.discovery.v3.Resource';

/** google.protobuf.Duration{seconds=1, nanos=2} of `ms` milliseconds, as a Resource's ttl field. */
function ttlField(ms: number): Buffer {
  const seconds = Math.floor(ms / 1000);
  const nanos = (ms % 1000) * 1_000_000;
  const body = Buffer.allocUnsafe(varintSize(seconds) + varintSize(nanos) + 2);
  let pos = 0;
  if (seconds) {
    body[pos++] = (1 << 3) | 0;
    pos = writeVarint(body, pos, seconds);
  }
  if (nanos) {
    body[pos++] = (2 << 3) | 0;
    pos = writeVarint(body, pos, nanos);
  }
  return lenField(RES.ttl, body.subarray(0, pos));
}

/**
 * envoy.service.discovery.v3.Resource{name, version, resource, ttl}: the delta wrapper, and the one
 * that gives a resource a TTL (SotW too). Without `anyBytes`, with a TTL: the heartbeat that renews
 * it (docs/xds-protocol.md SOTW-16, DELTA-12).
 */
export function encodeResourceWrapper(
  name: string,
  version: string,
  anyBytes: Uint8Array | undefined,
  ttlMs?: number,
): Buffer {
  return Buffer.concat([
    stringField(RES.version, version),
    ...(anyBytes ? [lenField(RES.resource, anyBytes)] : []),
    stringField(RES.name, name),
    ...(ttlMs !== undefined ? [ttlField(ttlMs)] : []),
  ]);
}

/**
 * `message` without its top-level field number `field` (every occurrence), by a scan of its tags:
 * the same bytes when it has none. What is kept is not parsed, only skipped over, with protobufjs's
 * reader, which throws on a truncated or malformed message.
 */
export function withoutField(message: Uint8Array, field: number): Uint8Array {
  return partitionField(message, field).rest;
}

const NOTHING = new Uint8Array(0);

/** A varint at `pos` (up to 32 bits of it, as tags and lengths are) and where it ends. */
function readVarint(b: Uint8Array, pos: number): { value: number; end: number } {
  let value = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= b.length) throw new RangeError(`index out of range: ${pos} + 1 > ${b.length}`);
    const byte = b[pos++]!;
    if (shift < 32) value |= (byte & 0x7f) << shift;
    if (byte < 0x80) return { value: value >>> 0, end: pos };
    if (shift > 63) throw new Error('invalid varint encoding');
  }
}

/** Where the value of a field with `tag` that starts at `pos` ends (groups by protobufjs's reader). */
function skipValue(b: Uint8Array, pos: number, tag: number): number {
  let end: number;
  switch (tag & 7) {
    case 0:
      return readVarint(b, pos).end;
    case 1:
      end = pos + 8;
      break;
    case 2: {
      const len = readVarint(b, pos);
      end = len.end + len.value;
      break;
    }
    case 5:
      end = pos + 4;
      break;
    default: {
      const reader = protobuf.Reader.create(b);
      reader.pos = pos;
      reader.skipType(tag & 7);
      return reader.pos;
    }
  }
  if (end > b.length) throw new RangeError(`index out of range: ${pos} + ${end - pos} > ${b.length}`);
  return end;
}

/**
 * `message` split in two, byte for byte: `rest` without any occurrence of a top-level `field`, and
 * `cut`, those occurrences (tags included) in their order: each a message of its own. Neither is
 * copied when the field is absent or all in one run (`rest` is `message` itself when absent).
 */
export function partitionField(message: Uint8Array, field: number): { rest: Uint8Array; cut: Uint8Array } {
  // Runs of kept and cut bytes as [start, end) offsets: views are made once at the end.
  const kept: number[] = [];
  const cut: number[] = [];
  let from = 0;
  let pos = 0;
  while (pos < message.length) {
    const at = pos;
    const tag = readVarint(message, pos);
    pos = skipValue(message, tag.end, tag.value);
    if (tag.value >>> 3 !== field) continue;
    if (at > from) kept.push(from, at);
    // Repeated fields come in one run: extend it rather than start another.
    if (cut.length && cut[cut.length - 1] === at) cut[cut.length - 1] = pos;
    else cut.push(at, pos);
    from = pos;
  }
  if (!cut.length) return { rest: message, cut: NOTHING };
  if (from < message.length) kept.push(from, message.length);
  const join = (runs: number[]) => {
    if (!runs.length) return NOTHING;
    if (runs.length === 2) return message.subarray(runs[0], runs[1]);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < runs.length; i += 2) parts.push(message.subarray(runs[i], runs[i + 1]));
    return Buffer.concat(parts);
  };
  return { rest: join(kept), cut: join(cut) };
}
