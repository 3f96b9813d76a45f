/**
 * The runtime flags fleetxds checks Runtime documents against (src/model/envoy-runtime-flags.ts,
 * generated) are those the installed Envoy binaries spell out: regenerated, nothing would change.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ENVOY_RELEASES_READ, ENVOY_RUNTIME_FLAGS } from '../../src/model/envoy-runtime-flags.ts';
import { binaryOf, flagsInBinary } from '../../src/packaging/envoy-runtime-flags.ts';
import { projectPath } from '../../src/shared/paths.ts';

test('each installed Envoy release: the flags in its binary are the generated list', () => {
  const installed = readdirSync(projectPath('.envoy')).flatMap((minor) => {
    const bin = binaryOf(join(projectPath('.envoy'), minor));
    return bin ? [[minor, bin] as const] : [];
  });
  assert.ok(installed.length >= 2, 'the test releases are installed');
  for (const [minor, bin] of installed) {
    assert.ok(ENVOY_RELEASES_READ.includes(minor), `Envoy ${minor} was read`);
    const listed = Object.keys(ENVOY_RUNTIME_FLAGS).filter((k) => ENVOY_RUNTIME_FLAGS[k]!.includes(minor));
    assert.equal(flagsInBinary(bin), listed, `Envoy ${minor}`);
  }
});

test.run();
