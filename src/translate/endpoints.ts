import type { EndpointDoc, ServiceDoc } from '../model/schema.ts';
import { parseHostPort } from '../shared/addresses.ts';
import { compact, type JsonObject } from '../features/kit/envoy-json.ts';
import { featureLoadAssignment } from './features.ts';

/**
 * Service -> ClusterLoadAssignment, endpoints grouped by (priority, locality). A service with no
 * endpoints still gets an (empty) assignment: it completes cluster warming in Envoy.
 * Localities always carry `locality` and a weight > 0, which gRPC clients require.
 */
/** An endpoint registered at run time, with the state proxies are told (EDS health_status). */
export interface RegisteredEndpoint {
  address: string;
  weight?: number;
  region?: string;
  zone?: string;
  subZone?: string;
  health: 'healthy' | 'unhealthy' | 'draining';
}

const HEALTH_STATUS = { healthy: 'HEALTHY', unhealthy: 'UNHEALTHY', draining: 'DRAINING' } as const;

type Item = EndpointDoc & { health?: RegisteredEndpoint['health'] };

/**
 * `registered`: endpoints that joined at run time, beside the static ones. They carry their
 * health_status (static ones none: UNKNOWN, used), which gRPC clients honour as Envoy does.
 */
export function buildLoadAssignment(s: ServiceDoc, registered: readonly RegisteredEndpoint[] = []): JsonObject {
  const groups = new Map<string, { priority: number; locality: JsonObject; items: Item[] }>();
  const all: Item[] = [
    ...(s.endpoints ?? []),
    ...registered.filter((r) => !s.endpoints?.some((e) => e.address === r.address)),
  ];
  for (const e of all) {
    const locality = compact({ region: e.region, zone: e.zone, sub_zone: e.subZone });
    const priority = e.priority ?? 0;
    const key = JSON.stringify([priority, e.region ?? '', e.zone ?? '', e.subZone ?? '']);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { priority, locality, items: [] }));
    g.items.push(e);
  }
  const keys = [...groups.keys()].sort();
  const endpoints = keys.map((k) => {
    const g = groups.get(k)!;
    const items = [...g.items].sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
    return compact({
      locality: g.locality,
      lb_endpoints: items.map((e) => {
        const hp = parseHostPort(e.address)!;
        return compact({
          endpoint: { address: { socket_address: { address: hp.host, port_value: hp.port } } },
          health_status: e.health && HEALTH_STATUS[e.health],
          load_balancing_weight: e.weight,
        });
      }),
      // A locality's weight counts the endpoints that take requests.
      load_balancing_weight: Math.max(
        1,
        items.reduce((a, e) => a + (e.health && e.health !== 'healthy' ? 0 : (e.weight ?? 1)), 0),
      ),
      priority: g.priority || undefined,
    });
  });
  return featureLoadAssignment(s, endpoints.length ? { cluster_name: s.name, endpoints } : { cluster_name: s.name });
}
