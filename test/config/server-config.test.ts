/**
 * The settings take their defaults from their schema (src/config/settings-schema.ts), the one place
 * that also generates docs/reference/server-settings.md: what a file leaves out is what the page says.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadServerConfig, restSettings } from '../../src/config/server-config.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { writeTree } from '../helpers/tree.ts';

const load = (yaml: string) => {
  const dir = writeTree({ 'f.yaml': yaml });
  return { config: loadServerConfig(join(dir, 'f.yaml'), {}), dir };
};
const MINIMAL = 'configDir: x\ndatabase: y\ngrpc: { listen: 127.0.0.1:0 }\nadmin: { listen: 127.0.0.1:0 }\n';

test('what a file leaves out takes the default its reference page shows', () => {
  const { config, dir } = load(`${MINIMAL}rest: { listen: 127.0.0.1:0 }\nfiles: { dir: out }\n`);
  const page = readFileSync(projectPath('docs', 'reference', 'server-settings.md'), 'utf8');
  const documented = (key: string) => {
    const row = page.split('\n').find((l) => l.startsWith(`| \`${key}\` |`));
    const d = row && /\(default `([^`]+)`\)/.exec(row)?.[1];
    assert.ok(d !== undefined, `the page gives ${key} a default`);
    return JSON.parse(d) as unknown;
  };
  const loaded: [string, unknown][] = [
    ['watch.enabled', config.watch.enabled],
    ['watch.debounceMs', config.watch.debounceMs],
    ['watch.maxWaitMs', config.watch.maxWaitMs],
    ['watch.reconcileMs', config.watch.reconcileMs],
    ['log.level', config.log.level],
    ['rest.refreshDelayMs', config.rest?.refreshDelayMs],
    ['rest.requestTimeoutMs', config.rest?.requestTimeoutMs],
    ['rest.bodyLimit', config.rest?.bodyLimit],
    ['rest.maxHeld', config.rest?.maxHeld],
    ['rest.maxCachedBytes', config.rest?.maxCachedBytes],
    ['files.enabled', config.files?.enabled],
    ['files.format', config.files?.format],
    ['files.layout', config.files?.layout],
  ];
  for (const [key, value] of loaded) assert.equal(value, documented(key), key);
  assert.is(config.files?.dir, join(dir, 'out'));
  assert.is(config.files?.envoyDir, join(dir, 'out'), 'the proxies see the files where they are written');
});

test("a file's own values stay; the hold follows the request timeout unless set", () => {
  const { config } = load(
    `${MINIMAL}rest: { listen: 127.0.0.1:0, requestTimeoutMs: 10000 }\nwatch: { debounceMs: 50 }\nlog: { level: warn }\n`,
  );
  assert.equal([config.rest?.requestTimeoutMs, config.rest?.holdMs], [10_000, 5_000]);
  assert.equal([config.watch.debounceMs, config.watch.maxWaitMs, config.watch.enabled], [50, 2000, true]);
  assert.is(config.log.level, 'warn');
  const r = restSettings({ listen: '127.0.0.1:0', holdMs: 100 });
  assert.equal([r.holdMs, r.requestTimeoutMs, r.maxHeld], [100, 30_000, 100_000]);
});

test('grpc-js as the gRPC server: one thread, no TLS, refused otherwise with what to drop', () => {
  const gjs = (more: string) => `configDir: x\ndatabase: y\nadmin: { listen: 127.0.0.1:0 }\n${more}`;
  assert.is(
    load(gjs('grpc: { listen: 127.0.0.1:0, implementation: grpc-js }\n')).config.grpc.implementation,
    'grpc-js',
  );
  for (const bad of [
    'grpc: { listen: 127.0.0.1:0, implementation: grpc-js, threads: 2 }\n',
    'grpc: { listen: 127.0.0.1:0, implementation: grpc-js, threads: auto }\n',
    'grpc: { listen: 127.0.0.1:0, implementation: grpc-js, tls: { certFile: c, keyFile: k } }\n',
  ])
    assert.throws(() => load(gjs(bad)), /grpc\.implementation grpc-js serves in one thread without TLS/, bad);
});

test.run();
