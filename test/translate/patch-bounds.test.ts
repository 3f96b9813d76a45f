/**
 * What one Envoy patch may produce is bounded: a short patch that copies a resource into itself
 * (doubling it per operation), or a merge patch larger than the bound, is refused at its line
 * before the resource grows; a copy within the bound still applies.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkTree } from '../../src/compile/check-tree.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

const patch = (body: string) => ({
  ...BASE,
  'patch.yaml': `kind: EnvoyPatch\nname: p\ntarget: { kind: cluster, name: api }\n${body}`,
});

test('64 self-copies are refused at the operation that passes the bound, quickly', async () => {
  const ops = Array.from({ length: 64 }, (_, i) => `  - { op: copy, from: "", path: /x${i} }`).join('\n');
  const t0 = Date.now();
  const r = await checkTree(writeTree(patch(`jsonPatch:\n${ops}\n`)));
  const ms = Date.now() - t0;
  assert.is(r.config, undefined);
  assert.equal(
    r.diagnostics.map(formatDiagnostic).filter((d) => d.includes('bytes')),
    [
      'patch.yaml:16:5: error FXDS_ENVOY_PATCH: EnvoyPatch/p jsonPatch[11]: on cluster/api: adds more than 1048576 ' +
        'bytes to the resource, the most one patch may',
    ],
  );
  assert.ok(ms < 10_000, `${ms} ms`);
});

test('a merge patch larger than the bound is refused (YAML aliases are bounded by the parser)', async () => {
  const big = 'x'.repeat(1_100_000);
  const r = await checkTree(writeTree(patch(`merge:\n  metadata: { filter_metadata: { x: { v: "${big}" } } }\n`)));
  const texts = r.diagnostics.map(formatDiagnostic);
  assert.equal(texts, [
    'patch.yaml:5:3: error FXDS_ENVOY_PATCH: EnvoyPatch/p merge: adds more than 1048576 bytes to cluster/api, ' +
      'the most one patch may',
  ]);
  assert.is(r.config, undefined);
});

test('a copy within the bound applies', async () => {
  const r = await checkTree(
    writeTree(patch('jsonPatch: [{ op: copy, from: /connect_timeout, path: /dns_refresh_rate }]\n')),
  );
  assert.equal(r.diagnostics.map(formatDiagnostic), []);
  assert.ok(r.config);
});

test.run();
