/**
 * A small world for end-to-end tests with real Envoy: HTTP backends that answer with their name,
 * a fleetxds config tree that routes to them (one node group, HTTP and HTTPS listener per Envoy),
 * the server as a process, and Envoys started from `fleetxds bootstrap` output (the real CLI).
 */
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest, Agent as HttpAgent, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { projectPath } from '../../src/shared/paths.ts';
import { makePki, type CertFiles, type Pki } from './certs.ts';
import { freePort, startEnvoy, type EnvoyProcess, type EnvoyVersion } from './envoy.ts';
import { fleetxdsArgs, spawnServer, waitFor, type ServerProcess } from './process.ts';
import { startSlowLink, type SlowLink } from './slow-link.ts';
import { tempDir } from './tree.ts';

const run = promisify(execFile);

export interface Backend {
  name: string;
  port: number;
  hits: number;
  server: Server;
}

export async function startHttpBackend(name: string): Promise<Backend> {
  const b: Backend = { name, port: 0, hits: 0, server: createServer() };
  b.server.on('request', (req, res) => {
    b.hits++;
    req.resume();
    res.setHeader('content-type', 'text/plain');
    res.end(name);
  });
  b.server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => b.server.listen(0, '127.0.0.1', r));
  b.port = (b.server.address() as { port: number }).port;
  return b;
}

/** How a lab Envoy connects; `rest-legacy` is a hand-written bootstrap with Envoy's default timeouts. */
/**
 * How an Envoy gets its config: a `fleetxds bootstrap --mode`, or one of two bootstraps as an operator
 * may have them: `rest-legacy` (REST, hand-written) and `ads-node-always` (fleetxds's ADS bootstrap
 * without set_node_on_first_message_only: Envoy then sends its whole node on every request).
 */
export type LabMode =
  'ads' | 'ads-node-always' | 'delta' | 'per-type' | 'per-type-delta' | 'rest' | 'rest-legacy' | 'files';

export interface LabEnvoySpec {
  /** Node group name and node id prefix. */
  id: string;
  mode: LabMode;
  version: EnvoyVersion;
  httpPort: number;
  httpsPort: number;
  /** Delays what this Envoy sends to the server (slow-link.ts): its requests arrive late. */
  uplinkDelayMs?: number;
  /**
   * The bootstrap's cluster for fleetxds named as an operator may name it (`rest-legacy`, `rest`,
   * `per-type*`): `authority` sets envoy_grpc.authority; `stated` keeps the node metadata that
   * names it (as `fleetxds bootstrap` writes it), else the server has only Host or :authority.
   */
  xdsCluster?: { name: string; authority?: string; stated?: boolean };
}

export interface Response {
  status: number;
  body: string;
  peerCn?: string;
}

const agent = new HttpAgent({ keepAlive: true, maxSockets: 8 });

/**
 * Closes the kept-alive connections no request is using: the next requests open new ones, which
 * get the listener as it is now (an open connection keeps the filter chain it was accepted with
 * while Envoy drains it).
 */
export function closeIdleConnections(): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
}

export function httpGet(port: number, path: string, host = 'shop.test', timeoutMs = 3000): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host }, agent, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** HTTPS through Envoy with SNI `servername`, verifying the certificate against the lab CA. */
export function httpsGet(port: number, path: string, servername: string, ca: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path, servername, ca, headers: { host: servername }, agent: false, timeout: 3000 },
      (res) => {
        const cert = (res.socket as import('node:tls').TLSSocket).getPeerCertificate?.();
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, peerCn: cert?.subject?.CN as string | undefined }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

export interface Lab {
  root: string;
  configDir: string;
  pki: Pki;
  backends: Record<string, Backend>;
  server: ServerProcess;
  specs: LabEnvoySpec[];
  envoys: Map<string, EnvoyProcess>;
  /** Rewrites one YAML file of the tree (the watcher applies it). */
  write(file: string, docs: object[]): void;
  /** The tree's documents, to edit and write back. */
  docs: Record<string, object[]>;
  startEnvoy(spec: LabEnvoySpec): Promise<EnvoyProcess>;
  /** Waits until `n` requests in a row on `path` reach `backend` through the Envoy of `spec`. */
  routesTo(spec: LabEnvoySpec, path: string, backend: string, n?: number): Promise<void>;
  stop(): Promise<void>;
  /** With `controlPlaneTls`: the files of the certificate fleetxds serves on gRPC and REST. */
  serverCertificate?: { certFile: string; keyFile: string };
  /** With `controlPlaneTls`: each Envoy's own certificate, by spec id (gRPC ones through file-based SDS). */
  clientCertificates: Map<string, CertFiles>;
}

export interface LabOptions {
  /** Extra server settings (merged into fleetxds.yaml). */
  settings?: Record<string, unknown>;
  backends?: string[];
  /**
   * gRPC and REST over mTLS (the lab CA; node ids bound to client certificates under
   * LAB_IDENTITY_PREFIX), each Envoy bootstrapped with its own certificate (`--tls-*`; gRPC ones
   * with `--tls-sds`, REST ones with the certificate read at start).
   */
  controlPlaneTls?: boolean;
}

export const LAB_IDENTITY_PREFIX = 'spiffe://lab.test/';

/** Services a, b (split), ep (endpoint change) on backends A and B; every spec gets a group and two listeners. */
export async function startLab(specs: LabEnvoySpec[], opts: LabOptions = {}): Promise<Lab> {
  const root = tempDir('fleetxds-envoy-');
  const configDir = join(root, 'services');
  mkdirSync(join(root, 'pki'));
  mkdirSync(configDir);
  const pki = makePki(join(root, 'pki'));
  const shop = pki.issue('shop', 'DNS:shop.test');
  const api = pki.issue('api', 'DNS:api.test');
  const names = opts.backends ?? ['A', 'B', 'C'];
  const backends = Object.fromEntries(
    await Promise.all(names.map(async (n) => [n, await startHttpBackend(n)] as const)),
  );
  const ep = (n: string) => [{ address: `127.0.0.1:${backends[n]!.port}` }];
  const docs: Record<string, object[]> = {
    'services.yaml': [
      { kind: 'Service', name: 'a', endpoints: ep('A') },
      { kind: 'Service', name: 'b', endpoints: ep('B') },
      { kind: 'Service', name: 'ep', endpoints: ep('A') },
    ],
    'routes.yaml': [
      {
        kind: 'VirtualHost',
        name: 'shop',
        domains: ['*'],
        routes: [
          {
            name: 'split',
            match: { prefix: '/split' },
            split: [
              { service: 'a', weight: 100 },
              { service: 'b', weight: 0 },
            ],
          },
          { name: 'ep', match: { prefix: '/ep' }, to: 'ep' },
        ],
      },
    ],
    'tls.yaml': [
      { kind: 'Secret', name: 'shop-cert', certificateFile: shop.cert, privateKeyFile: shop.key },
      { kind: 'Secret', name: 'api-cert', certificateFile: api.cert, privateKeyFile: api.key },
    ],
    'groups.yaml': specs.map((s) => ({ kind: 'NodeGroup', name: s.id, match: { idPattern: `${s.id}-*` } })),
    'listeners.yaml': specs.flatMap((s) => [
      {
        kind: 'Listener',
        name: `${s.id}-http`,
        address: '127.0.0.1',
        port: s.httpPort,
        groups: [s.id],
        virtualHosts: ['shop'],
      },
      {
        kind: 'Listener',
        name: `${s.id}-https`,
        address: '127.0.0.1',
        port: s.httpsPort,
        groups: [s.id],
        virtualHosts: ['shop'],
        tls: { secret: 'shop-cert', sni: [{ serverNames: ['api.test'], secret: 'api-cert' }] },
      },
    ]),
  };
  const write = (file: string, d: object[]) =>
    writeFileSync(join(configDir, file), d.map((x) => stringify(x)).join('---\n'));
  for (const [f, d] of Object.entries(docs)) write(f, d);
  const settings: Record<string, unknown> = {
    configDir: 'services',
    database: 'state/fleetxds.db',
    grpc: { listen: '127.0.0.1:0' },
    admin: { listen: '127.0.0.1:0' },
    rest: { listen: '127.0.0.1:0', holdMs: 4000, requestTimeoutMs: 8000, refreshDelayMs: 300 },
    watch: { enabled: true, debounceMs: 100, maxWaitMs: 1000 },
    log: { level: 'info' },
    // Envoy gets its certificates over SDS from a server that listens on loopback only.
    sds: { insecureLoopbackOnly: true },
    ...opts.settings,
  };
  let serverCertificate: Lab['serverCertificate'];
  const clientCertificates = new Map<string, CertFiles>();
  if (opts.controlPlaneTls) {
    const cert = pki.issue('fleetxds', 'DNS:localhost,IP:127.0.0.1');
    serverCertificate = { certFile: cert.cert, keyFile: cert.key };
    const tls = { ...serverCertificate, clientCaFile: pki.caCert, identityPrefix: LAB_IDENTITY_PREFIX };
    settings.grpc = { ...(settings.grpc as object), tls };
    settings.rest = { ...(settings.rest as object), tls: { ...tls } }; // a copy: the same object would be a YAML alias
  }
  writeFileSync(join(root, 'fleetxds.yaml'), stringify(settings));
  const server = await spawnServer(join(root, 'fleetxds.yaml'));
  const envoys = new Map<string, EnvoyProcess>();
  const links: SlowLink[] = [];

  const bootstrapFor = async (spec: LabEnvoySpec): Promise<any> => {
    const nodeId = `${spec.id}-1`;
    if (spec.mode === 'rest-legacy') {
      // As an operator writes it by hand: their own cluster name, Envoy's default request_timeout (1 s).
      const source = {
        resource_api_version: 'V3',
        api_config_source: {
          api_type: 'REST',
          transport_api_version: 'V3',
          cluster_names: [spec.xdsCluster?.name ?? 'ops_xds'],
          refresh_delay: '1s',
        },
      };
      return {
        node: { id: nodeId, cluster: spec.id },
        dynamic_resources: { cds_config: source, lds_config: source },
        static_resources: {
          clusters: [
            {
              name: spec.xdsCluster?.name ?? 'ops_xds',
              type: 'STATIC',
              connect_timeout: '1s',
              load_assignment: {
                cluster_name: spec.xdsCluster?.name ?? 'ops_xds',
                endpoints: [
                  {
                    lb_endpoints: [
                      {
                        endpoint: {
                          address: { socket_address: { address: '127.0.0.1', port_value: server.restPort } },
                        },
                      },
                    ],
                  },
                ],
              },
            },
          ],
        },
      };
    }
    let port = spec.mode === 'rest' ? server.restPort : server.grpcPort;
    if (spec.uplinkDelayMs) {
      const link = await startSlowLink(port, spec.uplinkDelayMs);
      links.push(link);
      port = link.port;
    }
    // Each Envoy's own certificate, for the node ids of its group.
    const client = opts.controlPlaneTls
      ? pki.issue(`${spec.id}-client`, `URI:${LAB_IDENTITY_PREFIX}node/${spec.id}-*`)
      : undefined;
    if (client) clientCertificates.set(spec.id, client);
    const sds = client && spec.mode !== 'rest' ? ['--tls-sds', join(root, `${spec.id}-sds`)] : [];
    const { stdout } = await run(
      process.execPath,
      [
        ...fleetxdsArgs(),
        'bootstrap',
        '--config',
        join(root, 'fleetxds.yaml'),
        '--group',
        spec.id,
        '--mode',
        spec.mode === 'ads-node-always' ? 'ads' : spec.mode,
        '--node-id',
        nodeId,
        '--server',
        `127.0.0.1:${port}`,
        ...(client ? ['--tls-ca', pki.caCert, '--tls-cert', client.cert, '--tls-key', client.key, ...sds] : []),
      ],
      { cwd: projectPath(), env: { ...process.env, FLEETXDS_REST_LISTEN: `127.0.0.1:${server.restPort}` } },
    );
    const bootstrap = JSON.parse(stdout);
    if (spec.mode === 'ads-node-always') bootstrap.dynamic_resources.ads_config.set_node_on_first_message_only = false;
    if (spec.xdsCluster) renameXdsCluster(bootstrap, spec.xdsCluster);
    return bootstrap;
  };

  const lab: Lab = {
    root,
    configDir,
    pki,
    backends,
    server,
    specs,
    envoys,
    docs,
    write,
    serverCertificate,
    clientCertificates,
    async startEnvoy(spec) {
      const e = await startEnvoy(spec.version, await bootstrapFor(spec), root);
      envoys.set(spec.id, e);
      return e;
    },
    async routesTo(spec, path, backend, n = 10) {
      let last = '';
      await waitFor(
        `${spec.id}: ${path} routed to ${backend}`,
        async () => {
          for (let i = 0; i < n; i++) {
            const r = await httpGet(spec.httpPort, path).catch((e) => ({ status: 0, body: String(e) }));
            last = `${r.status} ${r.body}`;
            if (r.status !== 200 || r.body !== backend) return false;
          }
          return true;
        },
        20_000,
        100,
      ).catch((err) => {
        throw new Error(
          `${(err as Error).message} (last: ${last})\n--- envoy log ---\n${envoys.get(spec.id)?.log().slice(-2500)}`,
        );
      });
    },
    async stop() {
      await Promise.all([...envoys.values()].map((e) => e.stop()));
      await server.stop();
      await Promise.all(links.map((l) => l.close()));
      for (const b of Object.values(backends)) b.server.close();
      agent.destroy();
    },
  };
  return lab;
}

export interface Load {
  paths: string[];
  sent: number;
  failed: number;
  failures: string[];
  stop(): Promise<void>;
}

/**
 * Workers per Envoy sending requests back to back over keep-alive connections; every answer that
 * is not a 200 is a failure, recorded (the first ten) with the Envoy, path, time and body.
 */
export function steadyLoad(specs: LabEnvoySpec[], paths: string[], workersPerEnvoy = 3): Load {
  let running = true;
  const started = Date.now();
  const load: Load = { paths, sent: 0, failed: 0, failures: [], stop: async () => {} };
  const worker = async (s: LabEnvoySpec, w: number) => {
    for (let i = w; running; i++) {
      const path = load.paths[i % load.paths.length];
      load.sent++;
      try {
        const r = await httpGet(s.httpPort, path!);
        if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body.slice(0, 100))}`);
      } catch (err) {
        load.failed++;
        const at = `${Date.now() - started} ms`;
        if (load.failures.length < 10) load.failures.push(`${s.id} ${path} at ${at}: ${(err as Error).message}`);
      }
    }
  };
  const all = specs.flatMap((s) => Array.from({ length: workersPerEnvoy }, (_, w) => worker(s, w)));
  load.stop = async () => {
    running = false;
    await Promise.all(all);
  };
  return load;
}

/** Renames the bootstrap's one static cluster (fleetxds) everywhere it is named. */
function renameXdsCluster(bootstrap: any, to: NonNullable<LabEnvoySpec['xdsCluster']>): void {
  const from: string = bootstrap.static_resources.clusters[0].name;
  const walk = (v: any): void => {
    if (Array.isArray(v)) {
      v.forEach((x, i) => (x === from ? (v[i] = to.name) : walk(x)));
      return;
    }
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (x === from && (k === 'name' || k === 'cluster_name')) v[k] = to.name;
      else walk(x);
      if (k === 'envoy_grpc' && to.authority) (x as any).authority = to.authority;
    }
  };
  walk(bootstrap);
  if (to.stated) bootstrap.node.metadata.fleetxds.xds_cluster = to.name;
  else delete bootstrap.node.metadata?.fleetxds?.xds_cluster;
}

/** Specs with fresh ports for each (mode, version). */
export async function labSpecs(list: [LabMode, EnvoyVersion][]): Promise<LabEnvoySpec[]> {
  const out: LabEnvoySpec[] = [];
  for (const [mode, version] of list) {
    out.push({
      id: `${mode}-${version.replace('.', '')}`,
      mode,
      version,
      httpPort: await freePort(),
      httpsPort: await freePort(),
    });
  }
  return out;
}

/** uvu reports a failing `before` hook with no message: print it, then fail. */
export function reportSetupFailure(err: unknown): never {
  console.error('setup failed:', err instanceof Error ? (err.stack ?? err.message) : err);
  throw err;
}
