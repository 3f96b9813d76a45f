/**
 * Locality across documents: a node group's workload (its proxies' local cluster) and the services
 * its proxies balance by zone. Zone-aware routing weighs each zone by the share of the caller's own
 * workload there: a service's zone-aware settings do nothing for a caller whose group names none.
 */
import { Codes, type PathSegment } from '../shared/diagnostics.ts';
import type { DiagnosticSink, DocRef, NeedService } from './diagnostic-sink.ts';
import type { NodeGroupDoc, ServiceDoc } from './schema.ts';
import { callersOf } from './targets.ts';
import type { Model } from './types.ts';

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
