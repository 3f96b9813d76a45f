/**
 * One Envoy of each release CI installs (1.40, 1.36) against one fleetxds, each Envoy in a node
 * group of its own (`g140`, `g136`) so a test gives each its own listeners and ports.
 */
import type { RunningApp } from '../../src/app/app.ts';
import { envoyBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { createServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { ENVOY_VERSIONS, freePort, startEnvoy, type EnvoyProcess, type EnvoyVersion } from './envoy.ts';
import { waitFor } from './process.ts';
import { tempDir } from './tree.ts';

/** The node group of a release's Envoy. */
export const groupOf = (v: EnvoyVersion): string => `g${v.replace('.', '')}`;

/** The NodeGroup document that puts a release's Envoy in its group. */
export const nodeGroupYaml = (v: EnvoyVersion): string =>
  `kind: NodeGroup\nname: ${groupOf(v)}\nmatch: { idPattern: "${groupOf(v)}-*" }\n`;

/** Starts each release's Envoy on an ADS bootstrap for `app`, and waits until `ready` holds for it. */
export async function startEnvoys(
  app: RunningApp,
  ready: (v: EnvoyVersion) => Promise<boolean>,
): Promise<EnvoyProcess[]> {
  const root = tempDir();
  const envoys: EnvoyProcess[] = [];
  for (const v of ENVOY_VERSIONS) {
    const g = groupOf(v);
    const bootstrap = envoyBootstrap({
      mode: 'ads',
      nodeId: `${g}-1`,
      nodeCluster: g,
      server: { host: '127.0.0.1', port: app.grpcPort },
    });
    envoys.push(await startEnvoy(v, bootstrap, root));
    await waitFor(`Envoy ${v} ready`, () => ready(v).catch(() => false), 20_000);
  }
  return envoys;
}

/** Stops the Envoys, then the server. */
export async function stopAll(envoys: readonly EnvoyProcess[], app: RunningApp | undefined): Promise<void> {
  for (const e of envoys) await e.stop();
  await app?.close();
}

/** One of several Envoys a suite runs; `label` says which (its release, its transport). */
export interface SuiteProxy {
  readonly name: string;
  envoy?: EnvoyProcess;
}

/** Stops a suite's proxies, then the server, then its backends. */
export async function stopSuite(
  proxies: readonly SuiteProxy[],
  app: RunningApp | undefined,
  servers: readonly Server[],
): Promise<void> {
  await stopAll(
    proxies.flatMap((p) => (p.envoy ? [p.envoy] : [])),
    app,
  );
  for (const s of servers) s.close();
}

/** Waits until `holds` for every proxy at once; one that never does fails with the end of its log. */
export async function everyProxy<P extends SuiteProxy>(
  proxies: readonly P[],
  what: string,
  holds: (p: P) => Promise<boolean>,
  ms: number,
  label: (p: P) => string,
): Promise<void> {
  await Promise.all(
    proxies.map((p) =>
      waitFor(`${p.name} (${label(p)}): ${what}`, () => holds(p).catch(() => false), ms).catch((e: Error) => {
        const log = p.envoy!.log().split('\n');
        throw new Error(
          `${e.message}\n${log
            .filter((l) => !l.includes('backtrace'))
            .slice(-25)
            .join('\n')}`,
        );
      }),
    ),
  );
}

/**
 * For each release, a free loopback port and, from `docs(v, port, group)`, the documents that use
 * it (its NodeGroup comes first); the ports by release.
 */
export async function perRelease<P>(
  ports: () => Promise<P>,
  docs: (v: EnvoyVersion, port: P, group: string) => string[],
): Promise<{ ports: Map<EnvoyVersion, P>; docs: string[] }> {
  const out = { ports: new Map<EnvoyVersion, P>(), docs: [] as string[] };
  for (const v of ENVOY_VERSIONS) {
    const p = await ports();
    out.ports.set(v, p);
    out.docs.push(nodeGroupYaml(v), ...docs(v, p, groupOf(v)));
  }
  return out;
}

/** A free loopback port for each name (for `perRelease`: each release's ports by role). */
export function freePorts<K extends string>(...names: K[]): () => Promise<Record<K, number>> {
  return async () => {
    const out = {} as Record<K, number>;
    for (const n of names) out[n] = await freePort();
    return out;
  };
}

/** Starts `server` on `host` (loopback by default) at a free port, remembered in `into` to close. */
export async function listenOn(server: Server, into: Server[], host = '127.0.0.1'): Promise<number> {
  into.push(server);
  await new Promise<void>((r) => server.listen(0, host, r));
  return (server.address() as AddressInfo).port;
}

/** An HTTP backend on a free loopback port answering every request with `backend` (closed with `into`). */
export function plainBackend(into: Server[]): Promise<number> {
  return listenOn(
    createServer((req, res) => {
      req.resume();
      res.end('backend');
    }),
    into,
  );
}

/** An HTTP listener on 127.0.0.1:`port` for a release's group, with the virtual host `site`. */
export const siteListenerYaml = (name: string, group: string, port: number, extra = ''): string =>
  `kind: Listener\nname: ${name}\naddress: 127.0.0.1\nport: ${port}\ngroups: [${group}]\nvirtualHosts: [site]\n${extra}`;
