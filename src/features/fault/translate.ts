/**
 * Fault injection in Envoy's terms: one fault filter on a listener some of whose virtual hosts or
 * routes inject faults, with no fault of its own, and each virtual host's or route's faults as its
 * per-route settings (the most specific wins, as Envoy merges them). Envoy honours its fault
 * headers only where a per-route config asks for them (header_abort, header_delay): nowhere else.
 */
import { durationToProto } from '../../shared/duration.ts';
import { compact, perMillion, type JsonObject } from '../kit/envoy-json.ts';
import { GRPC_STATUS_CODES } from '../kit/grpc-status.ts';
import type { FaultDoc, FaultRoute, FaultVirtualHost } from './schema.ts';

const FILTER = 'envoy.filters.http.fault';
const FAULT = 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault';
// HUNDRED is FractionalPercent's default denominator (proto3 JSON leaves it out).
const ALL_IN_PERCENT = { numerator: 100 };

function faultConfig(f: FaultDoc | false): JsonObject {
  if (f === false) return { '@type': FAULT };
  if (f.headerControlled)
    return compact({
      '@type': FAULT,
      // A request's -percentage header is a numerator over this denominator: percent, as operators read it.
      delay: { header_delay: {}, percentage: ALL_IN_PERCENT },
      abort: { header_abort: {}, percentage: ALL_IN_PERCENT },
      max_active_faults: f.maxActive,
    });
  return compact({
    '@type': FAULT,
    delay: f.delay && { fixed_delay: durationToProto(f.delay.fixed), percentage: perMillion(f.delay.percent) },
    abort: f.abort && {
      ...(f.abort.grpcStatus
        ? { grpc_status: GRPC_STATUS_CODES[f.abort.grpcStatus] }
        : { http_status: f.abort.status }),
      percentage: perMillion(f.abort.percent),
    },
    max_active_faults: f.maxActive,
  });
}

/** What a virtual host or route sets: its faults, or (a route's false) an empty fault config. */
export function faultPerFilterConfig(o: FaultRoute): JsonObject | undefined {
  return o.fault === undefined ? undefined : { [FILTER]: faultConfig(o.fault) };
}

function injects(v: FaultVirtualHost): boolean {
  return !!v.fault || v.routes.some((r) => !!r.fault);
}

/** The filter, on a listener whose virtual hosts inject faults somewhere (it injects none by itself). */
export function faultFilters(vhosts: readonly FaultVirtualHost[]): JsonObject[] {
  return vhosts.some(injects) ? [{ name: FILTER, typed_config: { '@type': FAULT } }] : [];
}
