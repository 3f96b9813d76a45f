/**
 * fleetxds's proto3 JSON codec (src/xds/proto-json.ts) beside a maintained one (@bufbuild/protobuf,
 * with a registry made from the same definitions, bench/lib/descriptor-set.ts): every resource of
 * every golden case is encoded by both, and the bytes, the decoded messages and the time compared.
 *   bash .ci/node.sh npx tsx bench/proto-json-library.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFileRegistry, fromBinary, fromJson, toBinary, toJson, type JsonValue } from '@bufbuild/protobuf';
import { isDeepStrictEqual } from 'node:util';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { encodeJson } from '../src/xds/proto-json.ts';
import { protoRoot } from '../src/xds/proto-root.ts';
import { descriptorSet } from './lib/descriptor-set.ts';
import { acceptedCases } from '../test/helpers/golden-cases.ts';

interface Resource {
  file: string;
  typeName: string;
  json: Record<string, unknown>;
}

function goldenResources(): Resource[] {
  const out: Resource[] = [];
  for (const c of acceptedCases())
    for (const f of readdirSync(c.expected)) {
      if (!f.endsWith('.json')) continue;
      const response = JSON.parse(readFileSync(join(c.expected, f), 'utf8')) as {
        resources?: Record<string, unknown>[];
      };
      for (const r of response.resources ?? []) {
        const { '@type': typeUrl, ...json } = r as { '@type': string };
        out.push({ file: `${c.name}/${f}`, typeName: typeUrl.slice(typeUrl.lastIndexOf('/') + 1), json });
      }
    }
  return out;
}

const { set, cycles } = descriptorSet(protoRoot());
const registry = createFileRegistry(fromJson(FileDescriptorSetSchema, set as JsonValue));
const resources = goldenResources();
let sameBytes = 0;
let sameMessage = 0;
let refused = 0;
const differences: string[] = [];
let oursMs = 0;
let theirsMs = 0;
const ROUNDS = 13;
for (let round = 0; round < ROUNDS; round++) {
  // Three rounds warm both up; the others are timed; the last is compared.
  const timed = round >= 3;
  const compared = round === ROUNDS - 1;
  for (const r of resources) {
    let t = performance.now();
    const ours = encodeJson(r.typeName, r.json);
    if (timed) oursMs += performance.now() - t;
    if (compared && ours.issues.length) differences.push(`${r.file}: ours reports ${ours.issues[0]!.message}`);
    const schema = registry.getMessage(r.typeName)!;
    let theirs: Uint8Array;
    try {
      t = performance.now();
      theirs = toBinary(schema, fromJson(schema, r.json as JsonValue, { registry }));
      if (timed) theirsMs += performance.now() - t;
    } catch (err) {
      if (compared) {
        refused++;
        differences.push(`${r.file}: the library refuses it: ${(err as Error).message.slice(0, 200)}`);
      }
      continue;
    }
    if (!compared) continue;
    if (Buffer.compare(Buffer.from(ours.bytes), Buffer.from(theirs)) === 0) sameBytes++;
    // The same message if both decode to the same JSON, Any payloads unpacked (their bytes may differ).
    else if (
      isDeepStrictEqual(
        toJson(schema, fromBinary(schema, ours.bytes), { registry }),
        toJson(schema, fromBinary(schema, theirs), { registry }),
      )
    )
      sameMessage++;
    else differences.push(`${r.file}: ${r.typeName} ${JSON.stringify(r.json.name ?? '')} decodes to another message`);
  }
}
console.log(`package cycles broken: ${cycles.length}`);
console.log(
  '| resources | same bytes | same message, other bytes | refused by the library | other | ours ms | library ms |',
);
console.log('|---|---|---|---|---|---|---|');
console.log(
  `| ${resources.length} | ${sameBytes} | ${sameMessage} | ${refused} | ${differences.length - refused} | ` +
    `${(oursMs / (ROUNDS - 3)).toFixed(1)} | ${(theirsMs / (ROUNDS - 3)).toFixed(1)} |`,
);
for (const d of differences.slice(0, 15)) console.log(`- ${d}`);
if (differences.length > 15) console.log(`- ... and ${differences.length - 15} more`);
