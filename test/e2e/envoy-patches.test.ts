/**
 * EnvoyPatch documents through real Envoy 1.40 and 1.36, with both releases as the pre-check:
 *  - a patch that adds the gzip compressor filter (a filter the patch names by its type) makes
 *    responses `content-encoding: gzip`;
 *  - a patch valid for one release and refused by the other (a route regex with a code point above
 *    \x{FF}: Envoy 1.36 reads patterns as UTF-8, 1.40 as Latin-1) is refused, the refusing release
 *    named, at the patch's line, and the previous version keeps serving;
 *  - a typo'd field is refused at the patch, the previous version keeps serving;
 *  - a patch on a cluster survives an unrelated change to that cluster's YAML.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import type { ApplyOutcome } from '../../src/app/pipeline.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';
import { ENVOY_VERSIONS, envoyBinary, freePort, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

let app: RunningApp;
let dir: string;
let base: string[];
let backend: net.Server;
const envoys: EnvoyProcess[] = [];
const ports = new Map<EnvoyVersion, number>();

const GZIP = `kind: EnvoyPatch
name: gzip
target: { kind: listener, name: "g*" }
filters:
  http:
    - name: envoy.filters.http.compressor
      typedConfig:
        '@type': type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor
        compressor_library:
          name: gzip
          typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip }
`;
const KEEPALIVE = `kind: EnvoyPatch
name: keepalive
target: { kind: cluster, name: web }
merge:
  upstream_connection_options: { tcp_keepalive: { keepalive_time: 300 } }
`;

function get(port: number, path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path, agent: false, headers: { 'accept-encoding': 'gzip' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
  });
}

/** Writes the tree (the base documents and `more`) and applies it. */
async function apply(...more: string[]): Promise<ApplyOutcome> {
  writeFileSync(join(dir, 'tree.yaml'), [...base, ...more].join('---\n'));
  return (await app.reload()) as ApplyOutcome;
}

test.before(async () => {
  try {
    backend = http.createServer((_q, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ data: 'x'.repeat(2048) }));
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const port = (backend.address() as net.AddressInfo).port;
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    base = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${port} }]\n`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes: [{ to: web }]\n',
      ...releases.docs,
    ];
    dir = writeTree({ 'tree.yaml': [...base, GZIP, KEEPALIVE].join('---\n') });
    app = await startServer(dir, { envoyCheck: { binaries: ENVOY_VERSIONS.map(envoyBinary) } });
    envoys.push(...(await startEnvoys(app, (v) => get(ports.get(v)!, '/').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  backend?.close();
});

test('a patch adding the gzip compressor filter compresses responses', async () => {
  for (const v of ENVOY_VERSIONS) {
    const r = await get(ports.get(v)!, '/');
    assert.is(r.headers['content-encoding'], 'gzip', `Envoy ${v}`);
    assert.is(JSON.parse(gunzipSync(r.body).toString()).data.length, 2048);
  }
  // The status API (and page) list the patches served.
  const status = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as {
    patches: { name: string; groups: string; target: string; form: string }[];
  };
  assert.equal(status.patches, [
    { name: 'gzip', groups: 'all', target: 'listener/g*', form: 'filters' },
    { name: 'keepalive', groups: 'all', target: 'cluster/web', form: 'merge' },
  ]);
});

test('a patch one release refuses is refused with that release named; the previous version keeps serving', async () => {
  const before = app.cache.current!.versionId;
  const outcome = await apply(
    GZIP,
    KEEPALIVE,
    `kind: EnvoyPatch
name: latin1
target: { kind: virtualHost, name: site }
jsonPatch:
  - { op: add, path: /routes/0/match, value: { safe_regex: { regex: "/caf\\\\x{100}" } } }
`,
  );
  assert.is(outcome.status, 'rejected');
  const text = outcome.diagnostics.map(formatDiagnostic).join('\n');
  assert.match(text, /tree\.yaml:\d+:1: error FXDS_ENVOY_REJECTED: EnvoyPatch\/latin1: Envoy 1\.40\.\d+ rejects it/);
  assert.not.match(text, /Envoy 1\.36\.\d+ rejects/, text);
  assert.is(app.cache.current!.versionId, before);
  for (const v of ENVOY_VERSIONS) assert.is((await get(ports.get(v)!, '/')).headers['content-encoding'], 'gzip');
});

test("a typo'd field is refused at the patch; the previous version keeps serving", async () => {
  const before = app.cache.current!.versionId;
  const outcome = await apply(
    GZIP,
    KEEPALIVE,
    'kind: EnvoyPatch\nname: typo\ntarget: { kind: cluster, name: web }\nmerge: { conect_timeout: 2s }\n',
  );
  assert.is(outcome.status, 'rejected');
  assert.match(
    outcome.diagnostics.map(formatDiagnostic).join('\n'),
    /EnvoyPatch\/typo: produces an invalid Envoy Cluster "web": conect_timeout: unknown field/,
  );
  assert.is(app.cache.current!.versionId, before);
});

test("a cluster patch survives an unrelated change to the cluster's YAML", async () => {
  base[0] = base[0]!.replace('endpoints:', 'connectTimeout: 3s\nendpoints:');
  const outcome = await apply(GZIP, KEEPALIVE);
  assert.is(outcome.status, 'applied', outcome.diagnostics.map(formatDiagnostic).join('\n'));
  for (const [i, v] of ENVOY_VERSIONS.entries()) {
    await waitFor(
      `Envoy ${v} has the new cluster`,
      async () => {
        const dump = await envoys[i]!.configDump();
        const c = JSON.stringify(dump).match(/"name":"web"[^]*?"connect_timeout":"3s"/);
        return c !== null;
      },
      20_000,
    );
    const dump = JSON.stringify(await envoys[i]!.configDump());
    const web = dump.slice(dump.indexOf('"name":"web"'));
    assert.match(web, /"keepalive_time":300/, `Envoy ${v}: the patch is still applied`);
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
