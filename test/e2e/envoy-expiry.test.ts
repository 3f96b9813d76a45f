/**
 * Expiring overrides through real Envoy 1.40 and 1.36, each over SotW ADS and delta ADS (four
 * proxies, each in a node group of its own):
 *  - a route with `for` answers until its deadline; then fleetxds serves a version without it by
 *    itself (audited as fleetxds's), which only the route configuration changes for;
 *  - a fault window and a Runtime override are served with an xDS TTL, renewed while fleetxds runs
 *    (they outlive two TTLs), and dropped by the proxies themselves one TTL after fleetxds is gone:
 *    the fault stops and the runtime key returns to its base value.
 */
import type { Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { envoyBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { ENVOY_VERSIONS, freePort, startEnvoy, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { everyProxy as everyProxyOf, plainBackend, siteListenerYaml, stopSuite } from '../helpers/envoy-releases.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const TTL_MS = 3000;
const MODES = ['ads', 'delta'] as const;

interface Proxy {
  readonly name: string;
  readonly port: number;
  envoy?: EnvoyProcess;
}

let app: RunningApp | undefined;
const proxies: Proxy[] = [];
const servers: Server[] = [];

test.before(async () => {
  try {
    const backend = await plainBackend(servers);
    const docs = [
      `kind: Service\nname: api\nendpoints: [{ address: 127.0.0.1:${backend} }]\n`,
      `kind: VirtualHost
name: site
domains: ["*"]
routes:
  - { match: { prefix: /maintenance }, directResponse: { status: 503, body: down }, for: 5s }
  - { match: { prefix: /chaos }, to: api, fault: { abort: { status: 418, percent: 100 }, for: 10m } }
  - { to: api }
`,
    ];
    const groups: string[] = [];
    for (const v of ENVOY_VERSIONS)
      for (const mode of MODES) {
        const name = `x${v.replace('.', '')}${mode[0]}`;
        const port = await freePort();
        proxies.push({ name, port });
        groups.push(name);
        docs.push(`kind: NodeGroup\nname: ${name}\nmatch: { idPattern: "${name}-*" }\n`);
        docs.push(siteListenerYaml(name, name, port));
      }
    docs.push(`kind: Runtime\nname: base\ngroups: [${groups}]\nvalues: { test.override: 1 }\n`);
    docs.push(`kind: Runtime\nname: raise\ngroups: [${groups}]\nvalues: { test.override: 7 }\nfor: 10m\n`);
    const tree = writeTree({ 'expiry.yaml': docs.join('---\n') });
    app = await startServer(tree, { grpc: { overrideTtlMs: TTL_MS } });
    const root = tempDir();
    let i = 0;
    for (const v of ENVOY_VERSIONS)
      for (const mode of MODES) {
        const p = proxies[i++]!;
        const bootstrap = envoyBootstrap({
          mode,
          nodeId: `${p.name}-1`,
          nodeCluster: p.name,
          server: { host: '127.0.0.1', port: app.grpcPort },
        });
        p.envoy = await startEnvoy(v, bootstrap, root);
        await waitFor(
          `Envoy ${p.name} ready`,
          async () => (await httpGet(p.port, '/').catch(() => undefined))?.status === 200,
          20_000,
        );
      }
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(() => stopSuite(proxies, app, servers));

const release = (p: Proxy): EnvoyVersion => ENVOY_VERSIONS[Math.floor(proxies.indexOf(p) / MODES.length)]!;

async function runtimeValue(p: Proxy, key: string): Promise<string | undefined> {
  const r = (await (await fetch(`http://127.0.0.1:${p.envoy!.adminPort}/runtime`)).json()) as {
    entries: Record<string, { final_value: string }>;
  };
  return r.entries[key]?.final_value;
}

function everyProxy(what: string, holds: (p: Proxy) => Promise<boolean>, ms: number): Promise<void> {
  return everyProxyOf(proxies, what, holds, ms, (p) => `Envoy ${release(p)}`);
}

const status = async (p: Proxy, path: string) => (await httpGet(p.port, path)).status;

test('a route with `for` answers until its deadline, then fleetxds serves a version without it by itself', async () => {
  const running = app!;
  for (const p of proxies) assert.is(await status(p, '/maintenance'), 503, p.name);
  const listenersBefore = await Promise.all(proxies.map((p) => p.envoy!.stats('listener_manager.listener_modified$')));
  const versionsBefore = (
    (await (await fetch(`http://127.0.0.1:${running.adminPort}/api/v1/versions`)).json()) as {
      versions: unknown[];
    }
  ).versions.length;
  await everyProxy('/maintenance reaches the backend', async (p) => (await status(p, '/maintenance')) === 200, 15_000);
  const versions = (await (await fetch(`http://127.0.0.1:${running.adminPort}/api/v1/versions`)).json()) as {
    versions: unknown[];
  };
  assert.is(versions.versions.length, versionsBefore + 1, 'one new version');
  const audit = (await (await fetch(`http://127.0.0.1:${running.adminPort}/api/v1/audit`)).json()) as {
    audit: { actor: string; action: string; detail: string }[];
  };
  const expired = audit.audit.find((a) => a.action === 'override-expired');
  assert.ok(expired, JSON.stringify(audit));
  assert.is(expired.actor, 'fleetxds');
  assert.match(expired.detail, /route 1 of VirtualHost \\"site\\"/);
  // Only the route configuration changed: no listener was replaced (no drain).
  const listenersAfter = await Promise.all(proxies.map((p) => p.envoy!.stats('listener_manager.listener_modified$')));
  assert.equal(listenersAfter, listenersBefore);
});

test('a fault window and a Runtime override outlive two TTLs while fleetxds runs (renewals keep them)', async () => {
  for (const p of proxies) {
    assert.is(await status(p, '/chaos'), 418, p.name);
    assert.is(await runtimeValue(p, 'test.override'), '7', p.name);
  }
  await new Promise((r) => setTimeout(r, 2 * TTL_MS));
  for (const p of proxies) {
    assert.is(await status(p, '/chaos'), 418, `${p.name} after two TTLs`);
    assert.is(await runtimeValue(p, 'test.override'), '7', `${p.name} after two TTLs`);
  }
});

test('with fleetxds gone, every proxy drops the overrides at the TTL: the fault stops, the key returns to its base', async () => {
  const running = app!;
  app = undefined;
  await running.close();
  const stopped = Date.now();
  await everyProxy('/chaos reaches the backend', async (p) => (await status(p, '/chaos')) === 200, 4 * TTL_MS);
  await everyProxy('test.override is back to 1', async (p) => (await runtimeValue(p, 'test.override')) === '1', TTL_MS);
  const took = Date.now() - stopped;
  // Not before the TTL could have lapsed (the last renewal came at most a third of it before).
  assert.ok(took >= TTL_MS / 2, `dropped after ${took} ms`);
  // The route that is not an override is untouched.
  for (const p of proxies) assert.is(await status(p, '/'), 200, p.name);
});

test.run();
