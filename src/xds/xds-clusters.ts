/**
 * Names of the static clusters generated bootstraps define (to reach fleetxds, and the local one). Generated
 * resources never route to them; an Envoy patch may only with allowControlPlaneChanges.
 */
export const GRPC_XDS_CLUSTER = 'fleetxds';
export const REST_XDS_CLUSTER = 'fleetxds_rest';

/**
 * The static cluster of a proxy's own workload (its group's `workload`), Envoy's local cluster. The
 * "/" keeps it apart from every served cluster: a service name has none.
 */
export const LOCAL_CLUSTER = 'fleetxds/local';
