/**
 * The yaml build fleetxds parses with (src/shared/yaml.ts) reads no environment variable while it
 * parses: yaml's Node build reads two per token and per document, which cost about a fifth of a
 * parse. The check counts reads of process.env during a parse of a file of many documents.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseWithYaml } from '../../src/source/parse-yaml.ts';
import { YAML_BUILD } from '../../src/shared/yaml.ts';

/** Runs `fn` with process.env counting the reads made of it. */
function countingEnvReads(fn: () => void): number {
  const real = process.env;
  let reads = 0;
  const counting = new Proxy(real, {
    get(target, key) {
      reads++;
      return Reflect.get(target, key);
    },
  });
  Object.defineProperty(process, 'env', { value: counting, configurable: true, writable: true, enumerable: true });
  try {
    fn();
  } finally {
    Object.defineProperty(process, 'env', { value: real, configurable: true, writable: true, enumerable: true });
  }
  return reads;
}

test('an ES-module build of yaml is the one loaded (bundled by the build, or the package files)', () => {
  assert.ok(YAML_BUILD === 'bundled' || YAML_BUILD === 'esm', YAML_BUILD);
});

test('a parse by yaml of 50 documents reads no environment variable', () => {
  const text = Array.from(
    { length: 50 },
    (_, i) => `kind: Service\nname: s-${i}\nendpoints: [{ address: 10.0.0.${i}:80 }]\n`,
  ).join('---\n');
  let parsed: ReturnType<typeof parseWithYaml> | undefined;
  const reads = countingEnvReads(() => (parsed = parseWithYaml('s.yaml', text, 'h')));
  assert.is(parsed!.documents.length, 50, 'the file was parsed');
  assert.is(reads, 0);
});

test.run();
