/**
 * Runtime feature flags checked against the Envoy releases read (src/model/envoy-runtime-flags.ts):
 * a tree alone (misspelt or long-gone flags, restart flags), and against the releases connected
 * proxies run (a flag their release does not know, a release not read). Table-driven.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENVOY_RELEASES_READ, ENVOY_RUNTIME_FLAGS } from '../../src/model/envoy-runtime-flags.ts';
import { connectedFleet } from '../../src/model/fleet.ts';
import { envoyReleaseOf, releaseKnows } from '../../src/model/runtime-flags.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const releases = ENVOY_RELEASES_READ;
const flags = Object.keys(ENVOY_RUNTIME_FLAGS);
const first = releases[0]!;
const last = releases.at(-1)!;
/** A flag every release read knows, and one the last knows but the first does not. */
const everywhere = flags.find((k) => k.startsWith('envoy.reloadable') && releases.every((r) => releaseKnows(r, k)))!;
const newer = flags.find((k) => k.startsWith('envoy.reloadable') && releaseKnows(last, k) && !releaseKnows(first, k))!;

test('the releases read: at least the two the tests run, each with its flags', () => {
  assert.ok(releases.includes('1.36') && releases.includes('1.40'), releases.join(', '));
  for (const r of releases) assert.ok(flags.filter((k) => releaseKnows(r, k)).length > 50, `Envoy ${r}`);
  assert.ok(everywhere && newer);
});

test('user agents: Envoy releases by major.minor, anything else is none', () => {
  assert.is(envoyReleaseOf('envoy/1.40.0'), '1.40');
  assert.is(envoyReleaseOf('envoy/1.36.4'), '1.36');
  assert.is(envoyReleaseOf('grpc-node-js/1.14.0'), undefined);
  assert.is(envoyReleaseOf('envoy'), undefined);
});

const runtime = (values: Record<string, unknown>) =>
  `kind: Runtime\nname: flags\nvalues:\n${Object.entries(values)
    .map(([k, v]) => `  ${k}: ${String(v)}\n`)
    .join('')}`;

async function warnings(values: Record<string, unknown>, agents: string[] = []): Promise<string[]> {
  const dir = writeTree({ ...BASE, 'runtime.yaml': runtime(values) });
  const fleet = connectedFleet(agents.map((userAgent, i) => ({ nodeId: `n${i}`, group: 'default', userAgent })));
  const r = await checkTree(dir, undefined, { fleet: () => fleet });
  assert.is(r.diagnostics.filter((d) => d.severity === 'error').length, 0, JSON.stringify(r.diagnostics));
  return r.diagnostics.map((d) => `${d.location?.file}:${d.location?.line} ${d.message}`);
}

const CASES: { name: string; values: Record<string, unknown>; agents?: string[]; want: RegExp[] }[] = [
  { name: 'a flag every release knows', values: { [everywhere]: true }, agents: ['envoy/1.36.4'], want: [] },
  { name: 'a key that is no flag', values: { 'upstream.healthy_panic_threshold': 30 }, want: [] },
  {
    name: 'a misspelt flag',
    values: { 'envoy.reloadable_features.no_such_flag_anywhere': true },
    want: [/runtime\.yaml:4 no Envoy release from \S+ to \S+ knows the runtime flag/],
  },
  {
    name: 'a restart flag',
    values: { 'envoy.restart_features.use_fast_protobuf_hash': true },
    want: [/runtime\.yaml:4 "envoy\.restart_features\.use_fast_protobuf_hash" is read when Envoy starts/],
  },
  {
    name: 'a newer flag with older proxies connected',
    values: { [newer]: true },
    agents: [`envoy/${first}.0`, `envoy/${first}.1`, `envoy/${last}.0`],
    want: [
      new RegExp(`runtime\\.yaml:4 node group "default" has proxies .* ignores it: Envoy ${first} \\(2 nodes\\)$`),
    ],
  },
  {
    name: 'a release not read',
    values: { [everywhere]: true },
    agents: ['envoy/9.99.0'],
    want: [/runtime\.yaml:4 fleetxds cannot tell whether the runtime flag .* Envoy 9\.99 \(1 node\) of node group/],
  },
];

for (const c of CASES)
  test(`runtime flags: ${c.name}`, async () => {
    const got = await warnings(c.values, c.agents);
    assert.is(got.length, c.want.length, got.join('\n'));
    c.want.forEach((w, i) => assert.match(got[i]!, w));
  });

test.run();
