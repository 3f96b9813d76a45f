import { msToProtoDuration } from '../shared/duration.ts';
import type { ConfigSourceFor } from '../snapshot/config-sources.ts';

/** Names of the static clusters generated bootstraps define for reaching fleetxds. */
export const GRPC_XDS_CLUSTER = 'fleetxds';
export const REST_XDS_CLUSTER = 'fleetxds_rest';

/** REST-polling proxies fetch EDS/RDS/SDS over REST too (ADS does not exist for REST). */
export function restConfigSource(refreshDelayMs: number, requestTimeoutMs: number): ConfigSourceFor {
  const source = {
    api_config_source: {
      api_type: 'REST',
      transport_api_version: 'V3',
      cluster_names: [REST_XDS_CLUSTER],
      refresh_delay: msToProtoDuration(refreshDelayMs),
      request_timeout: msToProtoDuration(requestTimeoutMs),
    },
    resource_api_version: 'V3',
  };
  return () => source;
}
