/**
 * Locality across documents: a node group's workload (its proxies' local cluster) and the services
 * its proxies balance by zone. Zone-aware routing weighs each zone by the share of the caller's own
 * workload there: a service's zone-aware settings do nothing for a caller whose group names none.
 */
import { Codes, type Diagnostic, type PathSegment } from '../shared/diagnostics.ts';
import { DiagnosticSink, type DocRef, type NeedService } from './diagnostic-sink.ts';
import type { ConnectedFleet } from './fleet.ts';
import type { NodeLocality } from './node-groups.ts';
import type { NodeGroupDoc, ServiceDoc } from './schema.ts';
import { callersOf } from './targets.ts';
import { originOf, type Model } from './types.ts';

export interface LocalityCheckContext {
  model: Model;
  sink: DiagnosticSink;
  ref: (kind: string, name: string) => DocRef;
  needService: NeedService;
}

const isPlaced = (e: { region?: string; zone?: string; subZone?: string }) => !!(e.region ?? e.zone ?? e.subZone);

export function checkLocalityAcrossDocuments(c: LocalityCheckContext): void {
  const { model } = c;
  const workloads = model.nodeGroups.filter((g) => g.workload !== undefined);
  const zoneAware = model.services.filter((s) => s.locality?.zoneAware);
  if (!workloads.length && !zoneAware.length) return;
  const callers = callersOf(model);
  for (const g of workloads) checkWorkload(c, g, callers.envoy);
  const byGroup = new Map(model.nodeGroups.map((g) => [g.name, g]));
  for (const s of zoneAware) {
    const r = c.ref('Service', s.name);
    const path: PathSegment[] = ['locality', 'zoneAware'];
    for (const group of [...(callers.envoy.get(s.name) ?? [])].sort())
      if (!byGroup.get(group)?.workload)
        c.sink.error(
          Codes.INVALID_VALUE,
          r,
          path,
          `node group "${group}" calls this service and names no workload: zone-aware routing weighs zones by ` +
            "the caller's own service (set NodeGroup.workload, then regenerate its bootstraps)",
        );
    for (const group of [...(callers.grpc.get(s.name) ?? [])].sort())
      c.sink.warn(
        Codes.CLIENT_COMPAT,
        r,
        path,
        `node group "${group}" calls this service from gRPC applications, which have no local cluster: they ` +
          'balance it over every zone alike',
      );
  }
}

function checkWorkload(c: LocalityCheckContext, g: NodeGroupDoc, calls: ReadonlyMap<string, ReadonlySet<string>>) {
  const r = c.ref('NodeGroup', g.name);
  const s: ServiceDoc | undefined = c.needService(r, ['workload'], g.workload!);
  if (!s) return;
  if (s.dns || s.aggregate) {
    c.sink.error(
      Codes.INVALID_VALUE,
      r,
      ['workload'],
      `service "${s.name}" is ${s.dns ? 'resolved by DNS' : 'an aggregate'}: a workload needs endpoints that say ` +
        'where they are (static or registered)',
    );
    return;
  }
  if (s.locality?.failover && calls.get(s.name)?.has(g.name))
    // One assignment serves both the group's local cluster (every caller alike) and its cluster of
    // the service (nearest first): it cannot be both.
    c.sink.error(
      Codes.CONFLICT,
      r,
      ['workload'],
      `this group also calls its workload "${s.name}", which fails over by locality: its proxies would be ` +
        'served one assignment as their local cluster and their nearest-first view of it',
    );
  if (!s.registration && !(s.endpoints ?? []).some(isPlaced))
    c.sink.warn(
      Codes.INVALID_VALUE,
      r,
      ['workload'],
      `no endpoint of service "${s.name}" says where it is (region, zone or subZone): zone-aware routing ` +
        'finds no caller in any zone',
    );
}

/** At most this many localities are named in one warning, those of the most nodes first. */
const LISTED_LOCALITIES = 8;

function localityText(l: NodeLocality): string {
  return [l.region, l.zone, l.subZone].filter(Boolean).join('/');
}

/** Whether an endpoint is near a caller in `l`: in its zone (failover), or its very locality (Envoy's zones). */
function near(e: EndpointPlace, l: NodeLocality, exact: boolean): boolean {
  const same = (a: string | undefined, b: string) => (a ?? '') === b;
  if (exact) return same(e.region, l.region) && same(e.zone, l.zone) && same(e.subZone, l.subZone);
  if (l.zone) return same(e.zone, l.zone) && (!l.region || same(e.region, l.region));
  return same(e.region, l.region);
}

interface EndpointPlace {
  region?: string;
  zone?: string;
  subZone?: string;
}

/**
 * Warnings from the connected fleet, at the service's `locality`: the callers of a service that
 * keeps traffic near them (failover, zone-aware) that declare no locality, and those in a locality
 * where it has no endpoint (their requests cross zones). Registered endpoints come and go, so a
 * service taking registrations is judged by who declares a locality only.
 */
export function localityFleetWarnings(
  model: Model,
  fleet: ConnectedFleet,
  textOf: (file: string) => string | undefined,
): Diagnostic[] {
  const sink = new DiagnosticSink(textOf);
  const keepNear = model.services.filter((s) => s.locality?.failover || s.locality?.zoneAware);
  if (!keepNear.length || !fleet.localities.size) return sink.diagnostics;
  const callers = callersOf(model);
  for (const s of keepNear) {
    const origin = originOf(s);
    const ref: DocRef | undefined = origin && { origin, kind: 'Service', name: s.name };
    const path: PathSegment[] = ['locality', s.locality!.zoneAware ? 'zoneAware' : 'failover'];
    const groups = new Set([...(callers.envoy.get(s.name) ?? []), ...(callers.grpc.get(s.name) ?? [])]);
    for (const group of [...groups].sort()) {
      const at = fleet.localities.get(group);
      if (!at) continue;
      const none = at.get('')?.nodes ?? 0;
      if (none)
        sink.warn(
          Codes.INVALID_VALUE,
          ref,
          path,
          `node group "${group}" has ${none} connected node${none === 1 ? '' : 's'} declaring no locality: ` +
            'they are served every endpoint alike (fleetxds bootstrap --region/--zone)',
        );
      if (s.registration) continue;
      const far: [string, number][] = [];
      for (const { locality, nodes } of at.values())
        if (locality && !(s.endpoints ?? []).some((e) => near(e, locality, !!s.locality!.zoneAware)))
          far.push([localityText(locality), nodes]);
      if (!far.length) continue;
      far.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
      const count = far.reduce((a, [, n]) => a + n, 0);
      const shown = far.slice(0, LISTED_LOCALITIES).map(([l, n]) => `${l} (${n})`);
      const more = far.length - shown.length;
      const nodes = count === 1 ? '1 connected node runs' : `${count} connected nodes run`;
      sink.warn(
        Codes.INVALID_VALUE,
        ref,
        path,
        `${nodes} of node group "${group}" where this service has no endpoint: ${shown.join(', ')}` +
          `${more > 0 ? ` and ${more} more localities` : ''}; their requests cross zones`,
      );
    }
  }
  return sink.diagnostics;
}
