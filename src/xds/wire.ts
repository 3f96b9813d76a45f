/**
 * Hand-assembled protobuf framing for the few envelope messages we send many times
 * (DiscoveryResponse, DeltaDiscoveryResponse, Resource, Any). Resources are encoded once and their
 * framed bytes are concatenated into each response, never re-encoded per client.
 */
const LEN = 2;

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** Tag + length + payload of a length-delimited field. */
export function lenField(field: number, payload: Uint8Array): Buffer {
  return Buffer.concat([varint((field << 3) | LEN), varint(payload.length), payload]);
}

export function stringField(field: number, s: string): Buffer {
  return s === '' ? Buffer.alloc(0) : lenField(field, Buffer.from(s, 'utf8'));
}

/** google.protobuf.Any { type_url = 1; value = 2; } */
export function encodeAny(typeUrl: string, value: Uint8Array): Buffer {
  return Buffer.concat([stringField(1, typeUrl), lenField(2, value)]);
}

// DiscoveryResponse: version_info=1, resources=2, type_url=4, nonce=5
export const DR = { versionInfo: 1, resources: 2, typeUrl: 4, nonce: 5, controlPlane: 6 } as const;
// DeltaDiscoveryResponse: system_version_info=1, resources=2, type_url=4, nonce=5, removed_resources=6
export const DDR = {
  systemVersionInfo: 1,
  resources: 2,
  typeUrl: 4,
  nonce: 5,
  removedResources: 6,
  controlPlane: 7,
} as const;
// Resource: version=1, resource=2, name=3
export const RES = { version: 1, resource: 2, name: 3 } as const;

/** envoy.service.discovery.v3.Resource{name, version, resource}: the delta wrapper. */
export function encodeResourceWrapper(name: string, version: string, anyBytes: Uint8Array): Buffer {
  return Buffer.concat([
    stringField(RES.version, version),
    lenField(RES.resource, anyBytes),
    stringField(RES.name, name),
  ]);
}
