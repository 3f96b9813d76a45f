/**
 * Names of the static clusters generated bootstraps define for reaching fleetxds. Generated
 * resources never route to them; an Envoy patch may only with allowControlPlaneChanges.
 */
export const GRPC_XDS_CLUSTER = 'fleetxds';
export const REST_XDS_CLUSTER = 'fleetxds_rest';
