/**
 * The floor of the machine for fan-out (`npm run bench -- peers`): SotW ADS on bare node:http2, no
 * gRPC library and no xDS logic. It encodes each type's DiscoveryResponse once from `fleetxds
 * render` output, answers the first request of each type on a stream, reads (and ignores) ACKs,
 * and on SIGHUP writes the types whose version changed to every stream that asked for them (SIGUSR1
 * first loads and encodes the file, so a push is timed alone): LDS and CDS in full, the other
 * types with the resources that changed only, as SotW allows and fleetxds does, so both send the
 * same bytes. What it spends per push is the
 * least any Node server can spend on the same bytes and streams.
 *
 * Usage: node --import tsx bench/lib/bare-h2-ads.ts RENDERED.json [GROUP]
 */
import { readFileSync } from 'node:fs';
import { createServer, type ServerHttp2Stream } from 'node:http2';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { RESOURCE_TYPES } from '../../src/xds/resource-types.ts';
import { DR, encodeAny, lenField, stringField } from '../../src/xds/wire.ts';

const [file, group = 'default'] = process.argv.slice(2);

interface Rendered {
  version_info: string;
  type_url: string;
  resources: Record<string, unknown>[];
}

interface TypeBodies {
  version: string;
  /** The full state: the response to a first request. */
  body: Buffer;
  /** Each resource's encoded Any, by name: what a push of a type other than LDS and CDS compares. */
  resources: Map<string, Buffer>;
}

/** Types whose SotW responses must hold every resource; for the others a push carries what changed. */
const FULL_STATE = new Set(
  RESOURCE_TYPES.filter((t) => t.kind === 'listener' || t.kind === 'cluster').map((t) => t.typeUrl),
);

function responseBody(version: string, typeUrl: string, resources: Iterable<Buffer>): Buffer {
  const parts = [stringField(DR.versionInfo, version)];
  for (const any of resources) parts.push(lenField(DR.resources, any));
  parts.push(stringField(DR.typeUrl, typeUrl));
  return Buffer.concat(parts);
}

/** type URL -> its version, full response body (without nonce) and resources */
function load(): Map<string, TypeBodies> {
  const all = JSON.parse(readFileSync(file!, 'utf8')) as Record<string, Record<string, Rendered>>;
  const out = new Map<string, TypeBodies>();
  for (const t of RESOURCE_TYPES) {
    const r = all[group]?.[t.kind];
    if (!r || t.kind === 'secret') continue;
    const resources = new Map<string, Buffer>();
    for (const { '@type': _, ...json } of r.resources) {
      const message = t.typeUrl.slice(t.typeUrl.indexOf('/') + 1);
      const name = String(json.name ?? json.cluster_name);
      resources.set(name, encodeAny(t.typeUrl, encodeJson(message, json).bytes));
    }
    out.set(t.typeUrl, {
      version: r.version_info,
      body: responseBody(r.version_info, t.typeUrl, resources.values()),
      resources,
    });
  }
  return out;
}

/** What a push of one type sends: the full state (LDS, CDS), or the resources that changed. */
function pushBody(typeUrl: string, before: TypeBodies | undefined, now: TypeBodies): Buffer {
  if (FULL_STATE.has(typeUrl) || !before) return now.body;
  const changed = [...now.resources].filter(([name, any]) => !before.resources.get(name)?.equals(any));
  return responseBody(
    now.version,
    typeUrl,
    changed.map(([, any]) => any),
  );
}

let bodies = load();
let prepared = bodies;

/** One gRPC message: compression flag 0, 4-byte length, payload. */
function frame(body: Buffer, nonce: number): Buffer {
  const nonceField = stringField(DR.nonce, String(nonce));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + nonceField.length, 1);
  return Buffer.concat([head, body, nonceField]);
}

/** type_url (4) and response_nonce (5) of a DiscoveryRequest, skipping every other field. */
function scan(msg: Buffer): { typeUrl: string; nonce: string } {
  let typeUrl = '';
  let nonce = '';
  for (let i = 0; i < msg.length;) {
    let tag = 0;
    for (let s = 0; ; s += 7) {
      const b = msg[i++]!;
      tag |= (b & 0x7f) << s;
      if (b < 0x80) break;
    }
    const wire = tag & 7;
    if (wire === 0) {
      while (msg[i++]! >= 0x80);
      continue;
    }
    if (wire !== 2) throw new Error(`unexpected wire type ${wire}`);
    let len = 0;
    for (let s = 0; ; s += 7) {
      const b = msg[i++]!;
      len += (b & 0x7f) * 2 ** s;
      if (b < 0x80) break;
    }
    const field = tag >>> 3;
    if (field === 4) typeUrl = msg.toString('utf8', i, i + len);
    if (field === 5) nonce = msg.toString('utf8', i, i + len);
    i += len;
  }
  return { typeUrl, nonce };
}

interface StreamState {
  stream: ServerHttp2Stream;
  nonce: number;
  types: Set<string>;
}
const streams = new Set<StreamState>();

const server = createServer({ settings: { maxConcurrentStreams: 1_000_000 } });
server.on('stream', (stream) => {
  const st: StreamState = { stream, nonce: 0, types: new Set() };
  streams.add(st);
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  let pending: Buffer = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 5) {
      const len = pending.readUInt32BE(1);
      if (pending.length < 5 + len) break;
      const { typeUrl, nonce } = scan(pending.subarray(5, 5 + len));
      pending = pending.subarray(5 + len);
      const body = bodies.get(typeUrl);
      if (nonce === '' && body && !st.types.has(typeUrl)) {
        st.types.add(typeUrl);
        stream.write(frame(body.body, ++st.nonce));
      }
    }
  });
  stream.on('close', () => streams.delete(st));
  stream.on('error', () => streams.delete(st));
});

process.on('SIGUSR1', () => {
  prepared = load();
  console.log(JSON.stringify({ event: 'prepared' }));
});

process.on('SIGHUP', () => {
  const started = performance.now();
  const before = bodies;
  bodies = prepared;
  for (const [typeUrl, b] of bodies) {
    if (before.get(typeUrl)?.version === b.version) continue;
    const body = pushBody(typeUrl, before.get(typeUrl), b);
    for (const st of streams) if (st.types.has(typeUrl)) st.stream.write(frame(body, ++st.nonce));
  }
  console.log(JSON.stringify({ event: 'published', loopMs: performance.now() - started }));
});

server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'listening', port: (server.address() as { port: number }).port }));
});
