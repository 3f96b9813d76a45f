/**
 * Fault injection in Envoy's terms: one fault filter on a listener some of whose virtual hosts or
 * routes inject faults, with no fault of its own, and each virtual host's or route's faults as its
 * per-route settings (the most specific wins, as Envoy merges them). Envoy honours its fault
 * headers only where a per-route config asks for them (header_abort, header_delay): nowhere else.
 *
 * A fault window (a fault with a deadline) injects nothing by its own config: its shares are
 * runtime keys of its own, set in the overrides layer (src/translate/runtime.ts), which is served
 * with an xDS TTL. If fleetxds is gone, the proxies drop the layer at the TTL and the fault stops.
 */
import { durationToProto } from '../../shared/duration.ts';
import { compact, perMillion, type JsonObject } from '../kit/envoy-json.ts';
import { GRPC_STATUS_CODES } from '../kit/grpc-status.ts';
import type { FaultDoc, FaultRoute, FaultVirtualHost } from './schema.ts';
import { hasDeadline, RESERVED_RUNTIME_PREFIX } from '../kit/deadline.ts';
import { canonicalJson } from '../../shared/canonical-json.ts';
import { sha256Hex } from '../../shared/hash.ts';

const FILTER = 'envoy.filters.http.fault';
const FAULT = 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault';
// HUNDRED is FractionalPercent's default denominator (proto3 JSON leaves it out).
const ALL_IN_PERCENT = { numerator: 100 };

/** A fault window's shares, as Envoy reads them: a percentage, or the runtime key that holds it. */
interface Shares {
  readonly delay: JsonObject;
  readonly abort: JsonObject;
  readonly delayKey?: string;
  readonly abortKey?: string;
}

/** The runtime keys of a fault window, named by its content: the same window anywhere shares them. */
function windowKeys(f: FaultDoc): { delay: string; abort: string } {
  const id = sha256Hex(canonicalJson(f)).slice(0, 16);
  return { delay: `${RESERVED_RUNTIME_PREFIX}fault.${id}.delay`, abort: `${RESERVED_RUNTIME_PREFIX}fault.${id}.abort` };
}

/** What a fault's config injects by itself, and what its window's runtime keys set (for the parts it has). */
function sharesOf(f: FaultDoc): { own: Shares; window?: Record<string, JsonObject> } {
  // A request's -percentage header is a numerator over HUNDRED: percent, as operators read it.
  const delay = f.headerControlled ? ALL_IN_PERCENT : f.delay ? perMillion(f.delay.percent) : undefined;
  const abort = f.headerControlled ? ALL_IN_PERCENT : f.abort ? perMillion(f.abort.percent) : undefined;
  if (!hasDeadline(f)) return { own: { delay: delay ?? NONE, abort: abort ?? NONE } };
  const keys = windowKeys(f);
  // No share of its own (proto3 JSON leaves a zero numerator out).
  const zero = (p: JsonObject | undefined): JsonObject => {
    if (!p) return NONE;
    const { numerator: _none, ...denominator } = p;
    return denominator;
  };
  return {
    own: {
      delay: zero(delay),
      abort: zero(abort),
      delayKey: delay && keys.delay,
      abortKey: abort && keys.abort,
    },
    window: { ...(delay && { [keys.delay]: delay }), ...(abort && { [keys.abort]: abort }) },
  };
}

const NONE: JsonObject = {};

function faultConfig(f: FaultDoc | false): JsonObject {
  if (f === false) return { '@type': FAULT };
  const { own } = sharesOf(f);
  const keys = { delay_percent_runtime: own.delayKey, abort_percent_runtime: own.abortKey };
  if (f.headerControlled)
    return compact({
      '@type': FAULT,
      delay: { header_delay: {}, percentage: own.delay },
      abort: { header_abort: {}, percentage: own.abort },
      max_active_faults: f.maxActive,
      ...keys,
    });
  return compact({
    '@type': FAULT,
    delay: f.delay && { fixed_delay: durationToProto(f.delay.fixed), percentage: own.delay },
    abort: f.abort && {
      ...(f.abort.grpcStatus
        ? { grpc_status: GRPC_STATUS_CODES[f.abort.grpcStatus] }
        : { http_status: f.abort.status }),
      percentage: own.abort,
    },
    max_active_faults: f.maxActive,
    ...keys,
  });
}

/**
 * The runtime values of the fault windows of these virtual hosts (their shares by key), for the
 * overrides layer; empty without a window.
 */
export function faultWindowValues(vhosts: readonly FaultVirtualHost[]): [string, JsonObject][] {
  const out: [string, JsonObject][] = [];
  const add = (f: FaultDoc | false | undefined) => {
    if (f && hasDeadline(f)) for (const kv of Object.entries(sharesOf(f).window!)) out.push(kv);
  };
  for (const v of vhosts) {
    add(v.fault);
    for (const r of v.routes) add(r.fault);
  }
  return out;
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
