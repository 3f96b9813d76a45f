import { checkTree } from '../compile/check-tree.ts';
import { grpcCertificateProviders } from '../bootstrap/grpc-certificates.ts';
import {
  BOOTSTRAP_MODES,
  envoyBootstrap,
  grpcBootstrap,
  proxySdsFiles,
  type BootstrapMode,
  type BootstrapTls,
} from '../bootstrap/envoy-bootstrap.ts';
import { loadServerConfig, splitListen, type ServerConfig } from '../config/server-config.ts';
import { NodeGroupResolver, nodeLocality, type NodeLocality } from '../model/node-groups.ts';
import { MAX_LOCALITY_NAME } from '../features/locality/schema.ts';
import { adminApi } from './admin-client.ts';
import type { NodeGroupDoc } from '../model/schema.ts';
import { DEFAULT_GROUP } from '../model/types.ts';
import { formatDiagnostic } from '../shared/diagnostics.ts';
import { mkdirSync } from 'node:fs';
import { writeFileAtomic } from '../shared/atomic-write.ts';
import { FileRenderer } from '../transports/files/file-renderer.ts';

export interface BootstrapArgs {
  config: string;
  group?: string;
  mode?: string;
  nodeId?: string;
  nodeCluster?: string;
  /** Where the node runs (node.locality); a group that selects by locality gives its own by default. */
  region?: string;
  zone?: string;
  subZone?: string;
  /** host:port as proxies reach the server; several for replicas. */
  server?: string[];
  /** When the server serves TLS: its CA, the name its certificate carries, the proxy's certificate and key. */
  tlsCa?: string;
  tlsServerName?: string;
  tlsCert?: string;
  tlsKey?: string;
  /** Write the file-based SDS files of the proxy's TLS into this directory and name them in the bootstrap. */
  tlsSds?: string;
  /** Envoy's own admin interface, host:port (default 127.0.0.1:9901). */
  envoyAdmin?: string;
}

function localityText(l: NodeLocality): string {
  return [l.region && `region ${l.region}`, l.zone && `zone ${l.zone}`, l.subZone && `sub-zone ${l.subZone}`]
    .filter(Boolean)
    .join(', ');
}

/**
 * The node groups a node is judged by: the running server's (what it will really be served by),
 * or, when the server cannot be asked, the tree its settings name (said on stderr).
 */
async function nodeGroups(settings: ServerConfig, local: readonly NodeGroupDoc[]): Promise<readonly NodeGroupDoc[]> {
  const api = adminApi(settings);
  const url = `${api.base}/api/v1/node-groups`;
  try {
    const res = await fetch(url, { headers: api.headers(), signal: AbortSignal.timeout(3000) });
    if (res.ok) return ((await res.json()) as { nodeGroups: NodeGroupDoc[] }).nodeGroups;
    process.stderr.write(`the server answered ${res.status} at ${url}; `);
  } catch {
    process.stderr.write(`no server answers at ${url}; `);
  }
  process.stderr.write(`node groups judged by the tree in ${settings.configDir}\n`);
  return local;
}

/**
 * The proxy's side of the server's TLS, from the flags; a message when they do not fit the server
 * settings (a bootstrap without TLS for a TLS server would only fail at the proxy, unexplained).
 */
function proxyTls(
  mode: string,
  a: BootstrapArgs,
  settings: ServerConfig,
  host: string,
): BootstrapTls | string | undefined {
  const given = [a.tlsCa, a.tlsServerName, a.tlsCert, a.tlsKey, a.tlsSds].some((f) => f !== undefined);
  const key = mode === 'rest' ? 'rest.tls' : 'grpc.tls';
  const served = mode === 'files' ? undefined : mode === 'rest' ? settings.rest?.tls : settings.grpc.tls;
  if (!served)
    return given ? `the server does not serve TLS to this mode (no ${key}); drop the --tls-* flags` : undefined;
  if (mode === 'grpc' && (a.tlsSds !== undefined || a.tlsServerName !== undefined))
    return (
      'gRPC applications take no --tls-sds (they re-read the files themselves) and no --tls-server-name ' +
      "(they check the server's certificate against the host of --server)"
    );
  if (!a.tlsCa)
    return `the server serves TLS (${key}): pass --tls-ca FILE, the CA of its certificate as the proxy sees it`;
  if (Boolean(a.tlsCert) !== Boolean(a.tlsKey)) return '--tls-cert and --tls-key go together';
  if (served.clientCaFile && !a.tlsCert)
    return `the server requires client certificates (${key}.clientCaFile): pass --tls-cert FILE and --tls-key FILE`;
  return { ca: a.tlsCa, serverName: a.tlsServerName ?? host, cert: a.tlsCert, key: a.tlsKey, sds: a.tlsSds };
}

/** A host name or IPv4 address, or an IPv6 address in brackets, then a port. */
const HOST_PORT = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/;

const MODES: readonly string[] = [...BOOTSTRAP_MODES, 'grpc'];

/**
 * `fleetxds bootstrap --group G --mode ads|delta|rest|files|grpc`: prints a bootstrap for a node
 * of group G. The node's cluster defaults to what the group matches on, and the result is checked
 * to really land in G with the current config.
 */
export async function bootstrapCommand(a: BootstrapArgs): Promise<number> {
  const mode = a.mode ?? 'ads';
  if (!MODES.includes(mode)) {
    process.stderr.write(`--mode must be one of ${MODES.join(', ')}\n`);
    return 2;
  }
  const settings = loadServerConfig(a.config);
  const tree = await checkTree(settings.configDir);
  if (!tree.model) {
    for (const d of tree.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
    return 1;
  }
  const group = a.group ?? DEFAULT_GROUP;
  const groups = await nodeGroups(settings, tree.model.nodeGroups);
  const doc = groups.find((g) => g.name === group);
  if (!doc && group !== DEFAULT_GROUP) {
    process.stderr.write(
      `no node group "${group}" (have: ${[DEFAULT_GROUP, ...groups.map((g) => g.name)].join(', ')})\n`,
    );
    return 2;
  }
  const envoyAdmin = a.envoyAdmin === undefined ? undefined : splitListen(a.envoyAdmin);
  if (envoyAdmin && (!HOST_PORT.test(a.envoyAdmin!) || envoyAdmin.port > 65535)) {
    process.stderr.write(`--envoy-admin must be HOST:PORT (Envoy's admin interface), not "${a.envoyAdmin}"\n`);
    return 2;
  }
  const nodeCluster = a.nodeCluster ?? doc?.match?.cluster ?? group;
  const nodeId = a.nodeId ?? `${group}-${process.env.HOSTNAME ?? 'node'}`;
  const given = { region: a.region, zone: a.zone, subZone: a.subZone };
  const locality = nodeLocality(Object.values(given).some((v) => v !== undefined) ? given : doc?.match?.locality);
  if (locality && [locality.region, locality.zone, locality.subZone].some((v) => v.length > MAX_LOCALITY_NAME)) {
    process.stderr.write(`--region, --zone and --sub-zone take at most ${MAX_LOCALITY_NAME} characters\n`);
    return 2;
  }
  const resolved = new NodeGroupResolver(groups).resolve({
    id: nodeId,
    cluster: nodeCluster,
    metadata: doc?.match?.metadata ?? {},
    ...(locality && { locality }),
  });
  if (resolved !== group) {
    const where = locality ? ` and locality ${localityText(locality)}` : '';
    process.stderr.write(
      `a node with id "${nodeId}", cluster "${nodeCluster}"${where} ` +
        `would join group "${resolved}", not "${group}"; pass --node-id/--node-cluster/--region/--zone/--sub-zone ` +
        `that match it\n`,
    );
    return 2;
  }
  const listen = (mode === 'rest' ? settings.rest?.listen : settings.grpc.listen) ?? '';
  if (mode === 'rest' && !settings.rest) {
    process.stderr.write('REST is not enabled in the server settings (rest.listen)\n');
    return 2;
  }
  const server = (a.server?.length ? a.server : [listen]).map(splitListen);
  const wildcard = server.find((s) => s.host === '0.0.0.0' || s.host === '::');
  if (mode !== 'files' && wildcard) {
    process.stderr.write(`the server listens on ${wildcard.host}; pass --server HOST:PORT as the proxies reach it\n`);
    return 2;
  }
  const tls = proxyTls(mode, a, settings, server[0]!.host);
  if (typeof tls === 'string') {
    process.stderr.write(`${tls}\n`);
    return 2;
  }
  let out: object;
  if (mode === 'grpc') {
    const providers = grpcCertificateProviders(tree.model, group, settings.configDir);
    out = grpcBootstrap({ id: nodeId, cluster: nodeCluster, locality }, server, providers, tls);
  } else if (mode === 'files') {
    if (!settings.files) {
      process.stderr.write('files are not enabled in the server settings (files.dir)\n');
      return 2;
    }
    const r = new FileRenderer(settings.files);
    out = envoyBootstrap({
      mode,
      nodeId,
      nodeCluster,
      locality,
      localCluster: doc?.workload
        ? { service: doc.workload, file: r.envoyPath(group, 'endpoint', doc.workload) }
        : undefined,
      admin: envoyAdmin,
      files: r.bootstrapFiles(group),
    });
  } else {
    const r = settings.rest;
    out = envoyBootstrap({
      mode: mode as BootstrapMode,
      nodeId,
      nodeCluster,
      locality,
      localCluster: doc?.workload ? { service: doc.workload } : undefined,
      admin: envoyAdmin,
      server,
      refreshDelayMs: r?.refreshDelayMs,
      requestTimeoutMs: r?.requestTimeoutMs,
      longPollMs: r?.holdMs,
      tls,
    });
  }
  if (tls?.sds) {
    mkdirSync(tls.sds, { recursive: true });
    for (const { path, doc } of proxySdsFiles(tls)) {
      // Only paths, no key material: readable by the proxy whatever user it runs as.
      await writeFileAtomic(path, `${JSON.stringify(doc, null, 2)}\n`, 0o644);
      process.stderr.write(`wrote ${path} (an SDS file of the bootstrap: keep it at this path beside Envoy)\n`);
    }
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  return 0;
}
