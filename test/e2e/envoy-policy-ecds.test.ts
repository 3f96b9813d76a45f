/**
 * Policy edits without draining listeners, through real Envoy 1.40 and 1.36 over SotW and delta
 * ADS, and Envoy 1.40 over per-type gRPC (SotW and delta) and REST (seven proxies, each in a node
 * group of its own).
 * Each listener requires a JWT and guards one path with access rules. Connections are opened before
 * each edit and used after it:
 *  - a JWT edit (the provider's keys replaced) reaches the proxies as an extension config (ECDS)
 *    alone: the next request on an HTTP/1.1 keep-alive connection opened before it is refused with
 *    the old token and let through with the new one, a WebSocket opened before it stays up, and no
 *    listener is updated (listener_modified and the LDS update_success count stay);
 *  - an access-rule edit reaches them as a route configuration alone, with the same proofs;
 *  - an extension config Envoy refuses (a key file absent on the proxy host) is NACKed: recorded,
 *    not sent again, and the proxies keep enforcing the last one they took.
 */
import http, { type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import WebSocket, { WebSocketServer } from 'ws';
import type { RunningApp } from '../../src/app/app.ts';
import { envoyBootstrap, type BootstrapMode } from '../../src/bootstrap/envoy-bootstrap.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import { freePort, startEnvoy, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { everyProxy as everyProxyOf, listenOn, stopSuite } from '../helpers/envoy-releases.ts';
import { ecKeys, jwks, signedToken, TEST_ISSUER } from '../helpers/jwt.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

const ECDS = TypeUrls.extension;
const PROXIES: readonly (readonly [EnvoyVersion, BootstrapMode])[] = [
  ['1.40', 'ads'],
  ['1.40', 'delta'],
  ['1.40', 'per-type'],
  ['1.40', 'per-type-delta'],
  ['1.40', 'rest'],
  ['1.36', 'ads'],
  ['1.36', 'delta'],
];

interface Proxy {
  readonly name: string;
  readonly release: EnvoyVersion;
  readonly mode: BootstrapMode;
  readonly port: number;
  envoy?: EnvoyProcess;
}

const oldKey = ecKeys();
const newKey = ecKeys();

const OLD = signedToken(oldKey.privateKey);
const NEW = signedToken(newKey.privateKey);

let app: RunningApp | undefined;
let tree = '';
const proxies: Proxy[] = [];
const servers: Server[] = [];
const docs = new Map<string, string>();

const policy = (keys: string) => `jwt:
  providers:
    - name: corp
      issuer: ${TEST_ISSUER}
      keys: { ${keys} }
  require: [corp]
`;
const site = (access: string) => `kind: VirtualHost
name: site
domains: ["*"]
routes:
  - { match: { prefix: /guarded }, to: api, access: { ${access}: [127.0.0.1/32] } }
  - { to: api }
`;

function write(): void {
  writeTree({ 'policy.yaml': [...docs.values()].join('---\n') }, tree);
}

/** Writes the tree and applies it. */
async function apply(): Promise<void> {
  write();
  assert.is(((await app!.reload()) as { status: string }).status, 'applied');
}

function setPolicy(keys: string): Promise<void> {
  for (const p of proxies) docs.set(p.name, listenerYaml(p, keys));
  return apply();
}

const listenerYaml = (p: Proxy, keys: string) =>
  `kind: Listener\nname: ${p.name}\naddress: 127.0.0.1\nport: ${p.port}\ngroups: [${p.name}]\nvirtualHosts: [site]\n${policy(keys)}`;

test.before(async () => {
  try {
    // An HTTP backend that also echoes WebSocket messages.
    const backend = http.createServer((req, res) => {
      req.resume();
      res.end('backend');
    });
    const echo = new WebSocketServer({ server: backend });
    echo.on('connection', (ws) => ws.on('message', (m) => ws.send(`echo ${(m as Buffer).toString()}`)));
    const port = await listenOn(backend, servers);
    docs.set('api', `kind: Service\nname: api\nendpoints: [{ address: 127.0.0.1:${port} }]\n`);
    docs.set('site', site('allow'));
    for (const [release, mode] of PROXIES) {
      const name = `p${release.replace('.', '')}${mode.replaceAll('-', '')}`;
      const p: Proxy = { name, release, mode, port: await freePort() };
      proxies.push(p);
      docs.set(`group-${name}`, `kind: NodeGroup\nname: ${name}\nmatch: { idPattern: "${name}-*" }\n`);
      docs.set(name, listenerYaml(p, `inline: '${jwks(oldKey.publicKey)}'`));
    }
    tree = tempDir();
    write();
    app = await startServer(tree, { rest: {} });
    const root = tempDir();
    for (const p of proxies) {
      const bootstrap = envoyBootstrap({
        mode: p.mode,
        nodeId: `${p.name}-1`,
        nodeCluster: p.name,
        server: { host: '127.0.0.1', port: p.mode === 'rest' ? app.restPort : app.grpcPort },
        ...(p.mode === 'rest' && { refreshDelayMs: 200 }),
      });
      p.envoy = await startEnvoy(p.release, bootstrap, root);
    }
    await everyProxy('serves the site with the first token', async (p) => (await fresh(p, '/', OLD)) === 200);
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(() => stopSuite(proxies, app, servers));

/** A status over a new connection. */
function fresh(p: Proxy, path: string, tok: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port: p.port, path, agent: false, headers: { authorization: `Bearer ${tok}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.setTimeout(3000, () => req.destroy(new Error('timed out')));
  });
}

/** One HTTP/1.1 connection kept open across requests; each answer says which connection carried it. */
class KeptConnection {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  constructor(private readonly port: number) {}

  get(path: string, tok: string): Promise<{ status: number; localPort: number }> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port: this.port, path, agent: this.agent, headers: { authorization: `Bearer ${tok}` } },
        (res) => {
          const localPort = req.socket!.localPort!;
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, localPort }));
        },
      );
      req.on('error', reject);
      req.setTimeout(3000, () => req.destroy(new Error('timed out')));
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A WebSocket through the proxy, opened with `tok`; `say` answers with the backend's echo. */
async function openSocket(p: Proxy, tok: string): Promise<{ say: (m: string) => Promise<string>; ws: WebSocket }> {
  const ws = new WebSocket(`ws://127.0.0.1:${p.port}/ws`, { headers: { authorization: `Bearer ${tok}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
  const say = (m: string) =>
    new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('no echo')), 3000);
      ws.once('message', (d) => {
        clearTimeout(t);
        resolve((d as Buffer).toString());
      });
      ws.send(m);
    });
  return { say, ws };
}

function everyProxy(what: string, holds: (p: Proxy) => Promise<boolean>, ms = 20_000): Promise<void> {
  return everyProxyOf(proxies, what, holds, ms, (p) => `Envoy ${p.release} ${p.mode}`);
}

/** The counters that move when a listener is updated, and those of its extension configs. */
async function listenerCounters(p: Proxy): Promise<{ modified: number; ldsUpdates: number; draining: number }> {
  const s = await p.envoy!.stats(
    'listener_manager\\.(listener_modified|lds\\.update_success|total_listeners_draining)$',
  );
  assert.ok('listener_manager.lds.update_success' in s, `${p.name}: the LDS counter exists`);
  return {
    modified: Number(s['listener_manager.listener_modified']),
    ldsUpdates: Number(s['listener_manager.lds.update_success']),
    draining: Number(s['listener_manager.total_listeners_draining'] ?? 0),
  };
}

async function ecdsReloads(p: Proxy): Promise<number> {
  const s = await p.envoy!.stats('extension_config_discovery\\..*config_reload$');
  const names = Object.keys(s);
  assert.ok(names.length > 0, `${p.name}: an extension config subscription exists`);
  return names.reduce((n, k) => n + Number(s[k]), 0);
}

test('a JWT edit reaches open connections as an extension config: no listener update, the WebSocket stays', async () => {
  const kept = new Map(proxies.map((p) => [p.name, new KeptConnection(p.port)]));
  const sockets = new Map<string, Awaited<ReturnType<typeof openSocket>>>();
  const before = new Map<string, { counters: Awaited<ReturnType<typeof listenerCounters>>; reloads: number }>();
  const firstPort = new Map<string, number>();
  try {
    for (const p of proxies) {
      const r = await kept.get(p.name)!.get('/', OLD);
      assert.is(r.status, 200, `${p.name}: the old token passes`);
      firstPort.set(p.name, r.localPort);
      const s = await openSocket(p, OLD);
      assert.is(await s.say('before'), 'echo before');
      sockets.set(p.name, s);
      before.set(p.name, { counters: await listenerCounters(p), reloads: await ecdsReloads(p) });
    }
    await setPolicy(`inline: '${jwks(newKey.publicKey)}'`);
    // The same keep-alive connection: refused with the old token once the new keys arrive.
    await everyProxy(
      'the kept connection refuses the old token',
      async (p) => (await kept.get(p.name)!.get('/', OLD)).status === 401,
    );
    for (const p of proxies) {
      const r = await kept.get(p.name)!.get('/', NEW);
      assert.is(r.status, 200, `${p.name}: the new token passes`);
      assert.is(r.localPort, firstPort.get(p.name), `${p.name}: on the connection opened before the edit`);
      assert.is(await sockets.get(p.name)!.say('after'), 'echo after', `${p.name}: the WebSocket stays up`);
      const b = before.get(p.name)!;
      assert.equal(await listenerCounters(p), b.counters, `${p.name}: no listener update, nothing draining`);
      assert.ok((await ecdsReloads(p)) > b.reloads, `${p.name}: the extension config was reloaded`);
    }
  } finally {
    for (const k of kept.values()) k.close();
    for (const s of sockets.values()) s.ws.terminate();
  }
});

test('an access-rule edit reaches open connections as a route configuration: no listener update', async () => {
  const kept = new Map(proxies.map((p) => [p.name, new KeptConnection(p.port)]));
  const before = new Map<string, Awaited<ReturnType<typeof listenerCounters>>>();
  const firstPort = new Map<string, number>();
  try {
    for (const p of proxies) {
      const r = await kept.get(p.name)!.get('/guarded', NEW);
      assert.is(r.status, 200, `${p.name}: allowed`);
      firstPort.set(p.name, r.localPort);
      before.set(p.name, await listenerCounters(p));
    }
    docs.set('site', site('deny'));
    await apply();
    await everyProxy(
      'the kept connection is refused by the new rule',
      async (p) => (await kept.get(p.name)!.get('/guarded', NEW)).status === 403,
    );
    for (const p of proxies) {
      const r = await kept.get(p.name)!.get('/', NEW);
      assert.is(r.status, 200, `${p.name}: other paths still pass`);
      assert.is(r.localPort, firstPort.get(p.name), `${p.name}: on the connection opened before the edit`);
      assert.equal(await listenerCounters(p), before.get(p.name), `${p.name}: no listener update`);
    }
  } finally {
    for (const k of kept.values()) k.close();
  }
});

test('an extension config Envoy refuses is NACKed, recorded, not sent again; the last one taken stays', async () => {
  const rejected = async (p: Proxy) => {
    const s = await p.envoy!.stats('extension_config_discovery\\..*config_fail$');
    return Object.values(s).reduce<number>((n, v) => n + Number(v), 0);
  };
  await setPolicy('file: /nonexistent/fleetxds-test-jwks.json');
  await everyProxy('refuses the extension config', async (p) => (await rejected(p)) >= 1);
  const admin = async (path: string) => (await fetch(`http://127.0.0.1:${app!.adminPort}${path}`)).json() as any;
  for (const p of proxies) {
    const node = await waitFor(`${p.name}: NACK recorded`, async () => {
      const n = await admin(`/api/v1/nodes/${p.name}-1`);
      return n.nacks?.some((x: { typeUrl: string }) => x.typeUrl === ECDS) && n;
    });
    const nack = node.nacks.find((x: { typeUrl: string }) => x.typeUrl === ECDS);
    if (p.mode !== 'rest') assert.match(nack.message, /fleetxds-test-jwks/, `Envoy's own text: ${nack.message}`);
    assert.is(await fresh(p, '/', NEW), 200, `${p.name}: the last extension config taken is enforced`);
    assert.is(await fresh(p, '/', OLD), 401, `${p.name}: still refuses the old key`);
  }
  const counted = await Promise.all(proxies.map(rejected));
  // A later route change reaches every proxy; the refused config was not sent again meanwhile.
  docs.set('site', site('allow'));
  await apply();
  await everyProxy('takes the later route change', async (p) => (await fresh(p, '/guarded', NEW)) === 200);
  for (const [i, p] of proxies.entries()) {
    // REST proxies poll: each poll that gets the refused config again would count.
    if (p.mode !== 'rest') assert.is(await rejected(p), counted[i], `${p.name}: not sent again`);
    assert.is(await fresh(p, '/', NEW), 200);
  }
});

test.run();
