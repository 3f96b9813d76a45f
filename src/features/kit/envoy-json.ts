/** What every translation writes Envoy's proto3 JSON with. Output is canonical (no unset fields). */

export type JsonObject = Record<string, unknown>;

/** A percentage as Envoy's FractionalPercent per million (the finest denominator). */
export function perMillion(percent: number): JsonObject {
  return { numerator: Math.round(percent * 10_000), denominator: 'MILLION' };
}

/** Envoy's StringMatcher for the one of exact, prefix and regex (RE2) that is set. */
export function stringMatcher(m: { exact?: string; prefix?: string; regex?: string }): JsonObject | undefined {
  if (m.exact !== undefined) return { exact: m.exact };
  if (m.prefix !== undefined) return { prefix: m.prefix };
  if (m.regex !== undefined) return { safe_regex: { regex: m.regex } };
  return undefined;
}

/**
 * Without its undefined values, so the JSON is canonical (proto3 omits unset fields). A copy, not
 * `delete`: deleting turns an object into a dictionary, and every later read of it (canonical
 * JSON, conversion, JSON text) is slower; a cold build compacts tens of thousands.
 */
export function compact<T extends JsonObject>(o: T): T {
  let unset = false;
  for (const k in o)
    if (o[k] === undefined) {
      unset = true;
      break;
    }
  if (!unset) return o;
  const out: JsonObject = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}
