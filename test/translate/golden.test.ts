/**
 * Golden files: YAML in (a feature's src/features/<name>/golden/<variant>/input, the others'
 * test/golden/cases/<case>/input, plus the bundled example config),
 * Envoy JSON out (expected/<group>.<type>.json). UPDATE_GOLDEN=1 rewrites them; review the diff
 * like code. Each case also checks determinism and that the encoded bytes decode to the JSON.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { decodeToJson, encodeObject, jsonToObject } from '../../src/xds/proto-json.ts';
import { messageName, RESOURCE_KINDS, TypeUrls } from '../../src/xds/resource-types.ts';
import { lookupType } from '../../src/xds/proto-root.ts';
import { acceptedCases } from '../helpers/golden-cases.ts';
import { localityVariants } from '../../src/snapshot/locality.ts';

const UPDATE = process.env.UPDATE_GOLDEN === '1';
const cases = acceptedCases();
cases.push({
  name: 'example-config',
  input: projectPath('config', 'services'),
  expected: projectPath('test', 'golden', 'example-config'),
});

for (const c of cases) {
  test(`golden: ${c.name}`, async () => {
    const r = await checkTree(c.input);
    assert.ok(r.config, r.diagnostics.map(formatDiagnostic).join('\n'));
    const rendered = new Map<string, string>();
    for (const [group, g] of r.config.groups) {
      for (const kind of RESOURCE_KINDS) {
        const t = g.types[kind];
        if (!t.resources.size) continue;
        // Every group has its runtime layer; a case shows it where its tree sets values.
        if (kind === 'runtime' && [...t.resources.values()].every((x) => !Object.keys(x.json.layer ?? {}).length))
          continue;
        // Secret resources carry key material: goldens pin their name and content version only.
        const body = (x: { name: string; version: string; json: object }) =>
          kind === 'secret' ? { name: x.name, version: x.version } : x.json;
        const doc = {
          version_info: t.version,
          type_url: TypeUrls[kind],
          resources: [...t.resources.values()].map((x) => ({ '@type': TypeUrls[kind], ...body(x) })),
        };
        rendered.set(`${group}.${kind}.json`, `${JSON.stringify(doc, null, 2)}\n`);
      }
      // What callers in each locality get of services that fail over by distance.
      for (const [key, v] of localityVariants(g, g.failover, undefined) ?? []) {
        const t = v.types.endpoint;
        const resources = [...t.resources.values()].filter((x) => g.failover!.has(x.name));
        const doc = { version_info: t.version, resources: resources.map((x) => x.json) };
        const from = (JSON.parse(key) as string[]).join('~');
        rendered.set(`${group}.endpoint.from-${from}.json`, `${JSON.stringify(doc, null, 2)}\n`);
      }
    }
    if (UPDATE) {
      rmSync(c.expected, { recursive: true, force: true });
      mkdirSync(c.expected, { recursive: true });
      for (const [f, text] of rendered) writeFileSync(join(c.expected, f), text);
    }
    assert.ok(existsSync(c.expected), `no golden files for ${c.name}; run UPDATE_GOLDEN=1 npm test`);
    const onDisk = readdirSync(c.expected).sort();
    assert.equal(onDisk, [...rendered.keys()].sort(), 'set of golden files');
    for (const f of onDisk)
      assert.fixture(rendered.get(f)!, readFileSync(join(c.expected, f), 'utf8'), `${c.name}/${f}`);
  });

  test(`deterministic and lossless: ${c.name}`, async () => {
    const a = await checkTree(c.input);
    const b = await checkTree(c.input);
    for (const [group, g] of a.config!.groups) {
      for (const kind of RESOURCE_KINDS) {
        const ta = g.types[kind],
          tb = b.config!.groups.get(group)!.types[kind];
        assert.is(ta.version, tb.version);
        for (const [name, res] of ta.resources) {
          assert.ok(
            Buffer.compare(res.any, tb.resources.get(name)!.any) === 0,
            `${group}/${kind}/${name} bytes differ between builds`,
          );
          const any = lookupType('google.protobuf.Any').decode(res.any) as unknown as {
            type_url: string;
            value: Uint8Array;
          };
          assert.is(any.type_url, TypeUrls[kind]);
          assert.equal(
            decodeToJson(TypeUrls[kind].split('/')[1]!, any.value),
            res.json,
            `${group}/${kind}/${name} does not round-trip`,
          );
          // Encoded without protobufjs's fromObject: the same bytes as with it.
          const type = lookupType(messageName(TypeUrls[kind]));
          const obj = jsonToObject(type, res.json, []);
          assert.ok(
            Buffer.compare(encodeObject(type, obj), type.encode(type.fromObject(obj)).finish()) === 0,
            `${group}/${kind}/${name}: encodeObject differs from fromObject + encode`,
          );
        }
      }
    }
  });
}

test.run();
