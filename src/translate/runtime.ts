/**
 * Runtime documents -> the group's RTDS layer: one Runtime resource named after the layer every
 * generated bootstrap declares, holding the values of the Runtime documents of the group. Every
 * group has it, empty when no document sets a value: a proxy waits for each layer it declares
 * before it starts, so a layer that is never served would hold every proxy back at start.
 */
import type { JsonObject } from '../features/kit/envoy-json.ts';
import type { RuntimeDoc } from '../model/schema.ts';
import { listenerGroups } from '../model/types.ts';

/** The RTDS layer's name, in bootstraps and as the resource's name. */
export const RUNTIME_LAYER = 'fleetxds';

/** The group's layer: the values its Runtime documents set, keys in order (validation refuses a key set twice). */
export function runtimeLayer(runtimes: readonly RuntimeDoc[], group: string): JsonObject {
  const values: [string, unknown][] = [];
  for (const r of runtimes)
    if (listenerGroups(r).includes(group)) for (const [k, v] of Object.entries(r.values)) values.push([k, v]);
  values.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { name: RUNTIME_LAYER, layer: Object.fromEntries(values) };
}
