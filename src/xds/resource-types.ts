/**
 * The one descriptor per resource type fleetxds serves: every transport, the admin API, the CLI,
 * tests and benchmarks read their per-type facts from here.
 *
 * The table is in make-before-break push order (docs/xds-protocol.md §4.7): clusters, then their
 * endpoints, then listeners, then the filter configs (ECDS) and routes they name; secrets, then the
 * runtime layer (which nothing references).
 */
export interface ResourceType<K extends string = string> {
  readonly kind: K;
  readonly typeUrl: string;
  /** The Envoy message's short name, as operators read it in Envoy's logs and config dumps. */
  readonly envoyName: string;
  /**
   * Whether the type has wildcard semantics (an empty first SotW request means "everything").
   * Only Listener and Cluster: applying the legacy rule to other types causes NACK loops
   * (docs/xds-protocol.md §4.5; envoy#10046, envoy#7529).
   */
  readonly wildcard: boolean;
  /** `POST /v3/discovery:<restPath>` (google.api.http annotation of the Fetch* method). */
  readonly restPath: string;
  /** Per-type gRPC service, and the noun of its Stream and Delta methods (`StreamClusters`). */
  readonly grpcService: string;
  readonly grpcNoun: string;
  /** Short name used in transport labels and metrics (`grpc-cds`). */
  readonly short: string;
  /** Resources of this type can reference others through config sources (rewritten per transport). */
  readonly carriesConfigSources: boolean;
  /**
   * A repeated message field whose entries are encoded (and hashed) one by one and concatenated:
   * a route configuration holds every virtual host of its listener, and an edit to one route must
   * not re-encode ten thousand. Protobuf allows it: a message's fields may come in any order, and a
   * repeated field's entries are read in the order they appear.
   */
  readonly parts?: { readonly field: string; readonly number: number; readonly message: string };
}

function type<K extends string>(t: ResourceType<K>): ResourceType<K> {
  return t;
}

export const RESOURCE_TYPES = [
  type({
    kind: 'cluster',
    typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    envoyName: 'Cluster',
    wildcard: true,
    restPath: 'clusters',
    grpcService: 'envoy.service.cluster.v3.ClusterDiscoveryService',
    grpcNoun: 'Clusters',
    short: 'cds',
    carriesConfigSources: true,
  }),
  type({
    kind: 'endpoint',
    typeUrl: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
    envoyName: 'ClusterLoadAssignment',
    wildcard: false,
    restPath: 'endpoints',
    grpcService: 'envoy.service.endpoint.v3.EndpointDiscoveryService',
    grpcNoun: 'Endpoints',
    short: 'eds',
    carriesConfigSources: false,
  }),
  type({
    kind: 'listener',
    typeUrl: 'type.googleapis.com/envoy.config.listener.v3.Listener',
    envoyName: 'Listener',
    wildcard: true,
    restPath: 'listeners',
    grpcService: 'envoy.service.listener.v3.ListenerDiscoveryService',
    grpcNoun: 'Listeners',
    short: 'lds',
    carriesConfigSources: true,
  }),
  type({
    kind: 'extension',
    typeUrl: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig',
    envoyName: 'TypedExtensionConfig',
    wildcard: false,
    restPath: 'extension_configs',
    grpcService: 'envoy.service.extension.v3.ExtensionConfigDiscoveryService',
    grpcNoun: 'ExtensionConfigs',
    short: 'ecds',
    carriesConfigSources: false,
  }),
  type({
    kind: 'route',
    typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
    envoyName: 'RouteConfiguration',
    wildcard: false,
    restPath: 'routes',
    grpcService: 'envoy.service.route.v3.RouteDiscoveryService',
    grpcNoun: 'Routes',
    short: 'rds',
    carriesConfigSources: false,
    parts: { field: 'virtual_hosts', number: 2, message: 'envoy.config.route.v3.VirtualHost' },
  }),
  type({
    kind: 'secret',
    typeUrl: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
    envoyName: 'Secret',
    wildcard: false,
    restPath: 'secrets',
    grpcService: 'envoy.service.secret.v3.SecretDiscoveryService',
    grpcNoun: 'Secrets',
    short: 'sds',
    carriesConfigSources: false,
  }),
  type({
    kind: 'runtime',
    typeUrl: 'type.googleapis.com/envoy.service.runtime.v3.Runtime',
    envoyName: 'Runtime',
    wildcard: false,
    restPath: 'runtime',
    grpcService: 'envoy.service.runtime.v3.RuntimeDiscoveryService',
    grpcNoun: 'Runtime',
    short: 'rtds',
    carriesConfigSources: false,
  }),
] as const;

export type ResourceKind = (typeof RESOURCE_TYPES)[number]['kind'];

/** Kinds in push order. */
export const RESOURCE_KINDS: readonly ResourceKind[] = RESOURCE_TYPES.map((t) => t.kind);

export const ResourceTypes = Object.fromEntries(RESOURCE_TYPES.map((t) => [t.kind, t])) as {
  readonly [K in ResourceKind]: ResourceType<K>;
};

/** kind -> type URL, derived from the descriptors (a convenience for code that only needs URLs). */
export const TypeUrls = Object.fromEntries(RESOURCE_TYPES.map((t) => [t.kind, t.typeUrl])) as {
  readonly [K in ResourceKind]: string;
};

const byUrl = new Map<string, ResourceType<ResourceKind>>(RESOURCE_TYPES.map((t) => [t.typeUrl, t]));
const byRestPath = new Map<string, ResourceType<ResourceKind>>(RESOURCE_TYPES.map((t) => [t.restPath, t]));

export function kindOfTypeUrl(url: string): ResourceKind | undefined {
  return byUrl.get(url)?.kind;
}

export function kindOfRestPath(path: string): ResourceKind | undefined {
  return byRestPath.get(path)?.kind;
}

/** Fully-qualified protobuf message name of a type URL. */
export function messageName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

export const DISCOVERY_REQUEST = 'envoy.service.discovery.v3.DiscoveryRequest';
export const DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse';
export const DELTA_DISCOVERY_REQUEST = 'envoy.service.discovery.v3.DeltaDiscoveryRequest';
export const DELTA_DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DeltaDiscoveryResponse';
