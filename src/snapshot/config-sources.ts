/**
 * Resources are translated with every dynamic reference pointing at ADS (`{ads: {}}`). Clients
 * that fetch over REST or read files need those references pointing at REST or at file paths
 * instead; this rewrites the three places translation emits them (a cluster's `eds_config`, an
 * HTTP connection manager's `rds.config_source`, and `sds_config` of TLS contexts), returning a
 * new object and leaving the cached one untouched.
 */
import type { ResourceKind } from '../xds/type-urls.ts';

export type ConfigSourceFor = (kind: ResourceKind, name: string) => Record<string, unknown>;

type Obj = Record<string, unknown>;

function isAds(v: unknown): boolean {
  return !!v && typeof v === 'object' && 'ads' in (v as Obj);
}

export function retargetConfigSources(json: Obj, sourceFor: ConfigSourceFor): Obj {
  const clusterName = typeof json.name === 'string' ? json.name : '';
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (!v || typeof v !== 'object') return v;
    const o = v as Obj;
    const out: Obj = {};
    for (const [k, val] of Object.entries(o)) out[k] = walk(val);
    if (isAds((o.eds_cluster_config as Obj | undefined)?.eds_config)) {
      const edsName = ((o.eds_cluster_config as Obj).service_name as string) || clusterName;
      out.eds_cluster_config = { ...(out.eds_cluster_config as Obj), eds_config: sourceFor('endpoint', edsName) };
    }
    if (o.rds && isAds((o.rds as Obj).config_source)) {
      out.rds = { ...(out.rds as Obj), config_source: sourceFor('route', String((o.rds as Obj).route_config_name)) };
    }
    if (typeof o.name === 'string' && isAds(o.sds_config)) out.sds_config = sourceFor('secret', o.name);
    return out;
  };
  return walk(json) as Obj;
}
