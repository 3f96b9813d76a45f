/**
 * Where a served resource tells the proxy to fetch what it references (a cluster's endpoints, a
 * listener's routes and filter configs, a TLS context's secrets). Translation points every such reference at ADS
 * (`{ads: {}}`); a proxy that is not on ADS rejects that (`ADS must be configured to support an
 * ADS config source`), so each transport serves a *view* of the snapshot with the references
 * rewritten to what that proxy uses:
 *  - per-type gRPC: `api_config_source` GRPC or DELTA_GRPC naming the proxy's own xDS cluster
 *    (Envoy sends that name as the HTTP/2 `:authority`);
 *  - REST: `api_config_source` REST naming the proxy's xDS cluster (REST polls carry it as Host),
 *    with timeouts matching whether the proxy opted into long polling;
 *  - files: `path_config_source` of the rendered file.
 * Envoy refuses an `api_config_source` naming a cluster its bootstrap does not define statically,
 * so the name must be the proxy's, never one of ours.
 *
 * A view re-encodes only the Clusters and Listeners whose JSON changes, once per (type snapshot,
 * variant); versions stay those of the underlying resources (a proxy always gets one variant).
 */
import { msToProtoDuration } from '../shared/duration.ts';
import { ResourceTypes, type ResourceKind } from '../xds/resource-types.ts';
import { encodeVariant, type EncodedResource } from './encoder.ts';
import type { TypeSnapshot } from './group-snapshot.ts';
import { derive } from './derived.ts';

export type ConfigSourceFor = (kind: ResourceKind, name: string) => Record<string, unknown>;

/** One way of pointing references; `key` identifies it in caches. */
export interface ConfigSourceVariant {
  readonly key: string;
  readonly sourceFor: ConfigSourceFor;
}

type Obj = Record<string, unknown>;

/**
 * Node metadata by which a proxy states the name of the static cluster it reaches fleetxds through
 * (`fleetxds bootstrap` writes it): `{fleetxds: {xds_cluster: NAME}}`.
 */
export const XDS_CLUSTER_METADATA = { namespace: 'fleetxds', field: 'xds_cluster' } as const;

/**
 * What a cluster name may be here: printable ASCII, spaces only inside, at most 255 characters.
 * Envoy takes almost any string as a cluster name (`xds.example.com:21002`, `rest@dc1`, `rest dc1`),
 * so nothing narrower.
 */
const CLUSTER_NAME = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

function statedClusterName(metadata: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const ns = metadata?.[XDS_CLUSTER_METADATA.namespace];
  const v = ns && typeof ns === 'object' ? (ns as Record<string, unknown>)[XDS_CLUSTER_METADATA.field] : undefined;
  return typeof v === 'string' && CLUSTER_NAME.test(v) ? v : undefined;
}

/**
 * The proxy's own cluster for fleetxds: the name its node metadata states; else the request's
 * Host (REST) or :authority (per-type gRPC), which Envoy sets to that cluster's name unless the
 * bootstrap sets `envoy_grpc.authority`; else `fallback`.
 */
export function xdsClusterName(
  metadata: Readonly<Record<string, unknown>> | undefined,
  header: string | undefined,
  fallback: string,
): string {
  return statedClusterName(metadata) ?? (header && CLUSTER_NAME.test(header) ? header : fallback);
}

/** Per-type gRPC (no ADS): references go to the same service kind over the proxy's xDS cluster. */
export function grpcVariant(clusterName: string, delta: boolean): ConfigSourceVariant {
  const source = {
    api_config_source: {
      api_type: delta ? 'DELTA_GRPC' : 'GRPC',
      transport_api_version: 'V3',
      grpc_services: [{ envoy_grpc: { cluster_name: clusterName } }],
    },
    resource_api_version: 'V3',
  };
  return { key: `grpc|${delta ? 'delta' : 'sotw'}|${clusterName}`, sourceFor: () => source };
}

export interface RestTiming {
  refreshDelayMs: number;
  /** Set for proxies that opted into long polling: their polls may be held this long. */
  requestTimeoutMs?: number;
}

/**
 * REST (ADS does not exist for REST): references poll over the proxy's REST cluster. Without
 * long polling the request timeout is left to Envoy's default (1 s) because polls are answered
 * at once.
 */
export function restVariant(clusterName: string, timing: RestTiming): ConfigSourceVariant {
  const source = {
    api_config_source: {
      api_type: 'REST',
      transport_api_version: 'V3',
      cluster_names: [clusterName],
      refresh_delay: msToProtoDuration(timing.refreshDelayMs),
      ...(timing.requestTimeoutMs ? { request_timeout: msToProtoDuration(timing.requestTimeoutMs) } : {}),
    },
    resource_api_version: 'V3',
  };
  return {
    key: `rest|${clusterName}|${timing.refreshDelayMs}|${timing.requestTimeoutMs ?? 0}`,
    sourceFor: () => source,
  };
}

function isAds(v: unknown): boolean {
  return !!v && typeof v === 'object' && 'ads' in (v as Obj);
}

/**
 * What to put where a resource references another over ADS. Each hook gets the object holding the
 * reference (already rewritten below it) and the referenced name, and returns its replacement.
 */
export interface AdsReferenceRewrite {
  /** A cluster whose endpoints come over EDS (`eds_cluster_config`). */
  eds(holder: Obj, serviceName: string): Obj;
  /** An HTTP connection manager whose routes come over RDS (`rds`). */
  rds(holder: Obj, routeConfigName: string): Obj;
  /** A TLS context's secret config (`name` + `sds_config`). */
  sds(holder: Obj, secretName: string): Obj;
  /** A filter whose config comes over ECDS (`name` + `config_discovery`). */
  ecds(filter: Obj, extensionName: string): Obj;
}

/** The one walk over a resource's ADS references (the input is untouched). */
export function rewriteAdsReferences(json: Obj, rewrite: AdsReferenceRewrite): Obj {
  const clusterName = typeof json.name === 'string' ? json.name : '';
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (!v || typeof v !== 'object') return v;
    const o = v as Obj;
    let out: Obj = {};
    for (const [k, val] of Object.entries(o)) out[k] = walk(val);
    const eds = o.eds_cluster_config as Obj | undefined;
    if (isAds(eds?.eds_config)) out = rewrite.eds(out, (eds!.service_name as string) || clusterName);
    const rds = o.rds as Obj | undefined;
    if (rds && isAds(rds.config_source)) out = rewrite.rds(out, String(rds.route_config_name));
    if (typeof o.name === 'string' && isAds(o.sds_config)) out = rewrite.sds(out, o.name);
    const discovery = o.config_discovery as Obj | undefined;
    if (typeof o.name === 'string' && isAds(discovery?.config_source)) out = rewrite.ecds(out, o.name);
    return out;
  };
  return walk(json) as Obj;
}

/** Returns `json` with every ADS reference replaced by `sourceFor`'s answer. */
export function retargetConfigSources(json: Obj, sourceFor: ConfigSourceFor): Obj {
  return rewriteAdsReferences(json, {
    eds: (c, name) => ({
      ...c,
      eds_cluster_config: { ...(c.eds_cluster_config as Obj), eds_config: sourceFor('endpoint', name) },
    }),
    rds: (h, name) => ({ ...h, rds: { ...(h.rds as Obj), config_source: sourceFor('route', name) } }),
    sds: (t, name) => ({ ...t, sds_config: sourceFor('secret', name) }),
    ecds: (f, name) => ({
      ...f,
      config_discovery: { ...(f.config_discovery as Obj), config_source: sourceFor('extension', name) },
    }),
  });
}

/** Views per resource or type snapshot: one per transport variant a fleet uses (cluster names, REST timing). */
const MAX_VARIANTS = 16;

function resourceView(r: EncodedResource, v: ConfigSourceVariant): EncodedResource {
  return derive(r, 'view', v.key, makeResourceView, v, MAX_VARIANTS);
}

function makeResourceView(r: EncodedResource, v: ConfigSourceVariant): EncodedResource {
  const json = retargetConfigSources(r.json, v.sourceFor);
  return JSON.stringify(json) === JSON.stringify(r.json) ? r : encodeVariant(r, json);
}

/**
 * The type snapshot as a proxy of that variant must see it (the same object for ADS, or for kinds
 * without references).
 */
export function viewOf(t: TypeSnapshot, v: ConfigSourceVariant | undefined): TypeSnapshot {
  if (!v || !ResourceTypes[t.kind].carriesConfigSources) return t;
  return derive(t, 'view', v.key, makeTypeView, v, MAX_VARIANTS);
}

function makeTypeView(t: TypeSnapshot, v: ConfigSourceVariant): TypeSnapshot {
  const resources = new Map([...t.resources].map(([name, r]) => [name, resourceView(r, v)]));
  return { kind: t.kind, version: t.version, resources, wildcard: t.wildcard.map((r) => resources.get(r.name)!) };
}
