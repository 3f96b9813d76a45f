/**
 * Runtime documents -> the group's RTDS layers, each one Runtime resource named after the layer
 * every generated bootstrap declares:
 *  - the base layer: the values of the group's Runtime documents without a deadline;
 *  - the overrides layer, above it: the values of those with a deadline, and the shares of fault
 *    windows (features/fault). It is served with an xDS TTL (src/xds/ttl.ts) while it holds
 *    anything, so proxies drop it by themselves if fleetxds is gone.
 * Every group has both, empty when nothing sets a value: a proxy waits for each layer it declares
 * before it starts, so a layer that is never served would hold every proxy back at start.
 */
import { hasDeadline } from '../features/kit/deadline.ts';
import { faultWindowValues } from '../features/fault/translate.ts';
import type { JsonObject } from '../features/kit/envoy-json.ts';
import type { RuntimeDoc, VirtualHostDoc } from '../model/schema.ts';
import { listenerGroups } from '../model/types.ts';

/** The base layer's name, in bootstraps and as the resource's name. */
export const RUNTIME_LAYER = 'fleetxds';
/** The overrides layer's name (above the base layer, below the admin layer). */
export const OVERRIDE_LAYER = 'fleetxds-overrides';

const byKey = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

function groupValues(runtimes: readonly RuntimeDoc[], group: string, expiring: boolean): [string, unknown][] {
  const values: [string, unknown][] = [];
  for (const r of runtimes)
    if (hasDeadline(r) === expiring && listenerGroups(r).includes(group))
      for (const [k, v] of Object.entries(r.values)) values.push([k, v]);
  return values;
}

/** The group's base layer, keys in order (validation refuses a key set twice). */
export function runtimeLayer(runtimes: readonly RuntimeDoc[], group: string): JsonObject {
  return { name: RUNTIME_LAYER, layer: Object.fromEntries(groupValues(runtimes, group, false).sort(byKey)) };
}

/** The group's overrides layer: its expiring Runtime documents' values and every fault window's shares. */
export function overrideLayer(
  runtimes: readonly RuntimeDoc[],
  vhosts: readonly VirtualHostDoc[],
  group: string,
): JsonObject {
  const values = [...groupValues(runtimes, group, true), ...faultWindowValues(vhosts)];
  return { name: OVERRIDE_LAYER, layer: Object.fromEntries(values.sort(byKey)) };
}
