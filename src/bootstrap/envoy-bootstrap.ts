/**
 * Envoy bootstraps for each way a proxy can reach fleetxds, and the gRPC xDS bootstrap for
 * proxyless clients. Output is proto3 JSON (valid YAML too) and is checked against the real
 * envoy.config.bootstrap.v3.Bootstrap proto before it is returned.
 */
import { isIP } from 'node:net';
import { posix } from 'node:path';
import { encodeJson } from '../xds/proto-json.ts';
import { XDS_CLUSTER_METADATA, grpcVariant, restVariant } from '../snapshot/config-sources.ts';
import { GRPC_XDS_CLUSTER, LOCAL_CLUSTER, REST_XDS_CLUSTER } from '../xds/xds-clusters.ts';
import { LONG_POLL_METADATA } from './config-source.ts';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../translate/grpc-server.ts';
import { CERTIFICATE_REFRESH } from './grpc-certificates.ts';
import type { NodeLocality } from '../model/node-groups.ts';
import { OVERRIDE_LAYER, RUNTIME_LAYER } from '../translate/runtime.ts';

/**
 * ads / delta: one aggregated stream; per-type / per-type-delta: one gRPC stream per
 * subscription (no ADS); rest: REST-JSON polling; files: rendered files.
 */
export type BootstrapMode = 'ads' | 'delta' | 'per-type' | 'per-type-delta' | 'rest' | 'files';
export const BOOTSTRAP_MODES: readonly BootstrapMode[] = [
  'ads',
  'delta',
  'per-type',
  'per-type-delta',
  'rest',
  'files',
];

export interface BootstrapInput {
  mode: BootstrapMode;
  nodeId: string;
  nodeCluster: string;
  /** Where the node runs: Envoy reports it (node.locality), and is served its locality's endpoints. */
  locality?: NodeLocality;
  /**
   * host:port of the gRPC server (ads/delta/per-type) or the REST server (rest); several for
   * replicas: they become the endpoints of the proxy's xDS cluster, so it fails over between them.
   */
  server?: Endpoint | readonly Endpoint[];
  refreshDelayMs?: number;
  requestTimeoutMs?: number;
  /** rest: how long the server may hold an unchanged poll (opts into long polling when > 0). */
  longPollMs?: number;
  /** files mode: where this group's CDS/LDS (and runtime layers') files are, as Envoy sees them. */
  files?: { cds: string; lds: string; rtds?: { base: string; overrides: string }; watchedDirectory?: string };
  /**
   * The service this node is an endpoint of (its group's workload): Envoy's local cluster, whose
   * endpoints by zone zone-aware routing weighs. `files` mode: where its assignment's file is.
   */
  localCluster?: { service: string; file?: string };
  /** Envoy's admin interface (default 127.0.0.1:9901). */
  admin?: { host: string; port: number };
  /** The server serves TLS (grpc.tls / rest.tls): how the proxy checks it and, for mTLS, who it is. */
  tls?: BootstrapTls;
}

/** Paths as the proxy sees them. */
export interface BootstrapTls {
  /** The CA the server's certificate is checked against. */
  ca: string;
  /** The name (DNS, or IP address) the server's certificate must carry; also the SNI when a DNS name. */
  serverName: string;
  /** The proxy's certificate and key, when the server requires client certificates. */
  cert?: string;
  key?: string;
  /**
   * The directory where the proxy finds the file-based SDS files of its TLS (proxySdsFiles): one
   * naming `ca`, one naming `cert` and `key`. Envoy then watches those files and takes a renewed
   * certificate or CA bundle without a restart. Without it, Envoy reads them once, at start.
   */
  sds?: string;
}

/** The secrets of the proxy's TLS to fleetxds, each in a file-based SDS file of its name (.json) in `sds`. */
export const PROXY_SECRETS = { certificate: 'fleetxds-client-certificate', ca: 'fleetxds-server-ca' } as const;

type Obj = Record<string, unknown>;

export interface Endpoint {
  host: string;
  port: number;
}

/**
 * TLS from the proxy to fleetxds: the server's certificate checked against `ca` and pinned to the
 * server's name (any certificate of that CA would do otherwise), and the proxy's own for mTLS.
 * gRPC needs ALPN h2: the server's HTTP/2 listener refuses a TLS connection that does not offer it.
 * With `sds`, the proxy's own certificate and the CA come through file-based SDS, renewed in place
 * (Envoy's "certificate rotation for xDS gRPC connection"); otherwise Envoy reads them once, at start.
 */
function upstreamTls(t: BootstrapTls, http2: boolean): Obj {
  const ip = isIP(t.serverName) !== 0;
  const fromFile = (name: string) => ({
    name,
    sds_config: { path_config_source: { path: posix.join(t.sds!, `${name}.json`) }, resource_api_version: 'V3' },
  });
  const pinned = {
    match_typed_subject_alt_names: [{ san_type: ip ? 'IP_ADDRESS' : 'DNS', matcher: { exact: t.serverName } }],
  };
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
      ...(ip ? {} : { sni: t.serverName }),
      common_tls_context: {
        ...(t.cert && t.key && t.sds
          ? { tls_certificate_sds_secret_configs: [fromFile(PROXY_SECRETS.certificate)] }
          : t.cert && t.key
            ? { tls_certificates: [{ certificate_chain: { filename: t.cert }, private_key: { filename: t.key } }] }
            : {}),
        ...(t.sds
          ? {
              combined_validation_context: {
                default_validation_context: pinned,
                validation_context_sds_secret_config: fromFile(PROXY_SECRETS.ca),
              },
            }
          : { validation_context: { trusted_ca: { filename: t.ca }, ...pinned } }),
        ...(http2 ? { alpn_protocols: ['h2'] } : {}),
      },
    },
  };
}

/**
 * The file-based SDS files of `t.sds`, by path: DiscoveryResponses of one Secret each (Envoy takes
 * one per file), naming the CA bundle, and the proxy's certificate and key. Envoy watches the files
 * they name: a CA bundle, or a certificate and key (read as a pair, checked unchanged in between,
 * when they share a directory), written whole and renamed into place is taken without a restart.
 */
export function proxySdsFiles(t: BootstrapTls): { path: string; doc: Obj }[] {
  if (!t.sds) return [];
  const secret = (name: string, body: Obj) => {
    const doc = {
      resources: [{ '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret', name, ...body }],
    };
    return {
      path: posix.join(t.sds!, `${name}.json`),
      doc: checked('SDS file', 'envoy.service.discovery.v3.DiscoveryResponse', doc),
    };
  };
  const files = [
    secret(PROXY_SECRETS.ca, {
      validation_context: { trusted_ca: { filename: t.ca }, watched_directory: { path: posix.dirname(t.ca) } },
    }),
  ];
  if (t.cert && t.key) {
    const dir = posix.dirname(t.cert);
    files.push(
      secret(PROXY_SECRETS.certificate, {
        tls_certificate: {
          certificate_chain: { filename: t.cert },
          private_key: { filename: t.key },
          ...(posix.dirname(t.key) === dir ? { watched_directory: { path: dir } } : {}),
        },
      }),
    );
  }
  return files;
}

function staticCluster(name: string, servers: readonly Endpoint[], http2: boolean, tls?: BootstrapTls): Obj {
  const c: Obj = {
    name,
    type: servers.every((s) => isIP(s.host)) ? 'STATIC' : 'STRICT_DNS',
    connect_timeout: '5s',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: servers.map((s) => ({
            endpoint: { address: { socket_address: { address: s.host, port_value: s.port } } },
          })),
        },
      ],
    },
  };
  if (http2) {
    // gRPC needs HTTP/2; keepalives detect half-open connections (Envoy docs, ads.yaml).
    c.typed_extension_protocol_options = {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: { connection_keepalive: { interval: '30s', timeout: '5s' } } },
      },
    };
    c.upstream_connection_options = { tcp_keepalive: {} };
  }
  if (tls) c.transport_socket = upstreamTls(tls, http2);
  return c;
}

/** Envoy's Locality message, without the fields left empty. */
function localityJson(l: NodeLocality): Obj {
  return {
    ...(l.region && { region: l.region }),
    ...(l.zone && { zone: l.zone }),
    ...(l.subZone && { sub_zone: l.subZone }),
  };
}

export function envoyBootstrap(input: BootstrapInput): Obj {
  const node: Obj = {
    id: input.nodeId,
    cluster: input.nodeCluster,
    ...(input.locality && { locality: localityJson(input.locality) }),
  };
  const admin = {
    address: { socket_address: { address: input.admin?.host ?? '127.0.0.1', port_value: input.admin?.port ?? 9901 } },
  };
  let dynamic: Obj;
  const clusters: Obj[] = [];
  switch (input.mode) {
    case 'ads':
    case 'delta': {
      dynamic = {
        ads_config: {
          api_type: input.mode === 'ads' ? 'GRPC' : 'DELTA_GRPC',
          transport_api_version: 'V3',
          set_node_on_first_message_only: true,
          grpc_services: [{ envoy_grpc: { cluster_name: GRPC_XDS_CLUSTER } }],
        },
        cds_config: { ads: {}, resource_api_version: 'V3' },
        lds_config: { ads: {}, resource_api_version: 'V3' },
      };
      clusters.push(staticCluster(GRPC_XDS_CLUSTER, serversOf(input), true, input.tls));
      break;
    }
    case 'per-type':
    case 'per-type-delta': {
      // The same config source the server writes into served clusters and listeners for this proxy.
      const source = grpcVariant(GRPC_XDS_CLUSTER, input.mode === 'per-type-delta').sourceFor('cluster', '');
      // Served resources name this proxy's cluster for fleetxds, whatever :authority it sends.
      node.metadata = { [XDS_CLUSTER_METADATA.namespace]: { [XDS_CLUSTER_METADATA.field]: GRPC_XDS_CLUSTER } };
      dynamic = { cds_config: source, lds_config: source };
      clusters.push(staticCluster(GRPC_XDS_CLUSTER, serversOf(input), true, input.tls));
      break;
    }
    case 'rest': {
      const longPoll = input.longPollMs ?? 0;
      // request_timeout only with long polling, and then above the server's hold time, or every
      // held poll counts as a failure; the server writes the same source into served resources.
      const source = restVariant(REST_XDS_CLUSTER, {
        refreshDelayMs: input.refreshDelayMs ?? 1000,
        requestTimeoutMs: longPoll > 0 ? (input.requestTimeoutMs ?? 30_000) : undefined,
      }).sourceFor('cluster', '');
      // The promise that lets the server hold polls (this proxy's request_timeout outlasts it), and
      // the name served resources give this proxy's cluster for fleetxds, whatever Host it sends.
      node.metadata = {
        // One namespace for both (LONG_POLL_METADATA's is the same).
        [XDS_CLUSTER_METADATA.namespace]: {
          [XDS_CLUSTER_METADATA.field]: REST_XDS_CLUSTER,
          ...(longPoll > 0 && { [LONG_POLL_METADATA.field]: longPoll }),
        },
      };
      dynamic = { cds_config: source, lds_config: source };
      clusters.push(staticCluster(REST_XDS_CLUSTER, serversOf(input), false, input.tls));
      break;
    }
    case 'files': {
      const f = input.files!;
      dynamic = {
        cds_config: fileSource(f.cds, f.watchedDirectory),
        lds_config: fileSource(f.lds, f.watchedDirectory),
      };
      break;
    }
  }
  // Where the local cluster's assignment and the runtime layer come from: the proxy's source of
  // clusters, or in files mode their own rendered files (none: not declared).
  const files = input.files;
  const sourceOf = (file: string | undefined): Obj | undefined =>
    !files ? (dynamic.cds_config as Obj) : file === undefined ? undefined : fileSource(file, files.watchedDirectory);
  const local = input.localCluster;
  if (local)
    clusters.push({
      name: LOCAL_CLUSTER,
      type: 'EDS',
      eds_cluster_config: { service_name: local.service, eds_config: sourceOf(local.file) },
    });
  const rtds = files ? files.rtds : { base: undefined, overrides: undefined };
  const layers = rtds && {
    base: sourceOf(rtds.base)!,
    // Over SotW ADS the overrides layer has a stream of its own: Envoy's SotW ADS tells every runtime
    // layer on the stream of a resource whose TTL lapsed, and a layer told of another's removal
    // stops Envoy. On a stream of its own the layer is the only one told.
    overrides:
      input.mode === 'ads'
        ? grpcVariant(GRPC_XDS_CLUSTER, false).sourceFor('runtime', OVERRIDE_LAYER)
        : sourceOf(rtds.overrides)!,
  };
  const bootstrap: Obj = {
    node,
    admin,
    dynamic_resources: dynamic,
    ...(clusters.length ? { static_resources: { clusters } } : {}),
    ...(local && { cluster_manager: { local_cluster_name: LOCAL_CLUSTER } }),
    // The group's Runtime values over RTDS, its overrides above them, under the admin layer (what
    // an operator sets by hand wins).
    ...(layers && {
      layered_runtime: {
        layers: [
          { name: RUNTIME_LAYER, rtds_layer: { name: RUNTIME_LAYER, rtds_config: layers.base } },
          { name: OVERRIDE_LAYER, rtds_layer: { name: OVERRIDE_LAYER, rtds_config: layers.overrides } },
          { name: 'admin', admin_layer: {} },
        ],
      },
    }),
  };
  return checked('bootstrap', 'envoy.config.bootstrap.v3.Bootstrap', bootstrap);
}

/** A rendered file as a config source. */
function fileSource(path: string, watchedDirectory: string | undefined): Obj {
  return {
    path_config_source: { path, ...(watchedDirectory ? { watched_directory: { path: watchedDirectory } } : {}) },
    resource_api_version: 'V3',
  };
}

/** `doc`, once the real proto (`type`) accepts it: what is generated for Envoy is never invalid. */
function checked(what: string, type: string, doc: Obj): Obj {
  const { issues } = encodeJson(type, doc);
  if (issues.length)
    throw new Error(`generated ${what} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
  return doc;
}

function serversOf(input: BootstrapInput): Endpoint[] {
  const list = [input.server ?? []].flat();
  if (!list.length) throw new Error(`mode ${input.mode} needs the server's address`);
  return list;
}

/**
 * The bootstrap proxyless gRPC clients read from GRPC_XDS_BOOTSTRAP (gRFC A27). Several replicas
 * given by IP address become one `ipv4:`/`ipv6:` target listing them all: the channel's pick_first
 * moves to the next address when one fails, in every gRPC implementation (grpc-js-xds uses only the
 * first of several xds_servers). Replicas named by DNS are listed as xds_servers, for clients that
 * fall back between them (gRFC A71); a DNS name that resolves to every replica serves all clients.
 */
export function grpcBootstrap(
  node: { id: string; cluster: string; locality?: NodeLocality },
  server: Endpoint | readonly Endpoint[],
  certificateProviders: Readonly<Record<string, object>> = {},
  /** TLS to fleetxds (gRFC A65): the CA of its certificate, and the application's own certificate. */
  tls?: Pick<BootstrapTls, 'ca' | 'cert' | 'key'>,
): Obj {
  const list = [server].flat();
  const family = (h: string) => isIP(h);
  const sameFamily =
    list.length > 1 && list.every((s) => family(s.host) !== 0 && family(s.host) === family(list[0]!.host));
  const uri = (s: Endpoint) => `${s.host.includes(':') ? `[${s.host}]` : s.host}:${s.port}`;
  const uris = sameFamily ? [`ipv${family(list[0]!.host)}:${list.map(uri).join(',')}`] : list.map(uri);
  return {
    xds_servers: uris.map((u) => ({
      server_uri: u,
      // The application re-reads the files (like a certificate provider): a renewed certificate is
      // used for its next connections without a restart. The server's certificate must name the host
      // of server_uri: gRPC checks it against that.
      channel_creds: [
        tls
          ? {
              type: 'tls',
              config: {
                ca_certificate_file: tls.ca,
                ...(tls.cert && { certificate_file: tls.cert, private_key_file: tls.key }),
                refresh_interval: CERTIFICATE_REFRESH,
              },
            }
          : { type: 'insecure' },
      ],
      server_features: ['xds_v3'],
    })),
    node: { id: node.id, cluster: node.cluster, locality: node.locality ? localityJson(node.locality) : {} },
    // xDS-enabled servers (gRFC A36) ask for the listener of the address they bind by this name.
    server_listener_resource_name_template: GRPC_SERVER_LISTENER_TEMPLATE,
    ...(Object.keys(certificateProviders).length && { certificate_providers: certificateProviders }),
  };
}
