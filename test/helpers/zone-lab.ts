/**
 * Real Envoys standing in several zones of one fleetxds, for the locality tests: each proxy says
 * where it runs (node.locality, as `fleetxds bootstrap --region --zone` writes it), and requests
 * through it are counted by the zone that answered.
 */
import type { RunningApp } from '../../src/app/app.ts';
import { envoyBootstrap, type BootstrapInput } from '../../src/bootstrap/envoy-bootstrap.ts';
import { startEnvoy, type EnvoyProcess, type EnvoyVersion } from './envoy.ts';
import { httpGet } from './envoy-lab.ts';
import { waitFor } from './process.ts';
import { tempDir } from './tree.ts';

export interface ZoneProxy {
  id: string;
  version: EnvoyVersion;
  zone: string;
  /** Its listener's port (in a node group of its own). */
  port: number;
  envoy?: EnvoyProcess;
}

/** Starts each proxy on an ADS bootstrap in `region`/its zone, and waits until `readyPath` answers 200. */
export async function startZoneProxies(
  app: RunningApp,
  proxies: readonly ZoneProxy[],
  region: string,
  opts: { nodeCluster: string; readyPath?: string; bootstrap?: Partial<BootstrapInput> },
): Promise<void> {
  const root = tempDir();
  for (const p of proxies) {
    const bootstrap = envoyBootstrap({
      mode: 'ads',
      nodeId: p.id,
      nodeCluster: opts.nodeCluster,
      locality: { region, zone: p.zone, subZone: '' },
      server: { host: '127.0.0.1', port: app.grpcPort },
      ...opts.bootstrap,
    });
    p.envoy = await startEnvoy(p.version, bootstrap, root);
    await waitFor(
      `Envoy ${p.id} ready`,
      async () => (await httpGet(p.port, opts.readyPath ?? '/').catch(() => undefined))?.status === 200,
      20_000,
    );
  }
}

/**
 * `n` requests through a proxy's `port`, `parallel` at a time: how many each answer counted as
 * (`keyOf` the body of a 200), and the failures by status.
 */
export async function spread(
  port: number,
  n: number,
  opts: { parallel?: number; path?: string; keyOf?: (body: string) => string } = {},
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const r = await httpGet(port, opts.path ?? '/').catch((e: Error) => ({ status: 0, body: e.message }));
      const key = r.status === 200 ? (opts.keyOf?.(r.body) ?? r.body) : `failed ${r.status}`;
      out[key] = (out[key] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: opts.parallel ?? 10 }, worker));
  return out;
}
