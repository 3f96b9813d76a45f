/** The v3 resource types fleetxds serves, in make-before-break push order (CDS, EDS, LDS, RDS, SDS). */
export const TypeUrls = {
  cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
} as const;

export type ResourceKind = keyof typeof TypeUrls;
export type TypeUrl = (typeof TypeUrls)[ResourceKind];

export const RESOURCE_KINDS: readonly ResourceKind[] = ['cluster', 'endpoint', 'listener', 'route', 'secret'];

const kindByUrl = new Map<string, ResourceKind>(RESOURCE_KINDS.map((k) => [TypeUrls[k], k]));

export function kindOfTypeUrl(url: string): ResourceKind | undefined {
  return kindByUrl.get(url);
}

/** Fully-qualified protobuf message name of a type URL. */
export function messageName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

/**
 * Listener and Cluster are the only types with wildcard semantics in SotW; applying the legacy
 * "empty names = everything" rule to other types causes NACK loops (envoy#10046, envoy#7529).
 */
export function supportsWildcard(kind: ResourceKind): boolean {
  return kind === 'listener' || kind === 'cluster';
}

export const DISCOVERY_REQUEST = 'envoy.service.discovery.v3.DiscoveryRequest';
export const DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse';
export const DELTA_DISCOVERY_REQUEST = 'envoy.service.discovery.v3.DeltaDiscoveryRequest';
export const DELTA_DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DeltaDiscoveryResponse';
