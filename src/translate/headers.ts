/**
 * Header edits in Envoy's terms, the same at every level that has them (route configuration,
 * virtual host, route): set replaces, add appends, remove drops; requests and responses alike.
 */
import type { HeadersDoc } from '../model/schema.ts';
import type { JsonObject } from '../features/kit/envoy-json.ts';

function toAdd(set: Record<string, string> | undefined, add: Record<string, string> | undefined): JsonObject[] {
  return [
    ...Object.entries(set ?? {}).map(([key, value]) => ({
      header: { key, value },
      append_action: 'OVERWRITE_IF_EXISTS_OR_ADD',
    })),
    // APPEND_IF_EXISTS_OR_ADD is the enum's zero value: canonical JSON leaves it out.
    ...Object.entries(add ?? {}).map(([key, value]) => ({ header: { key, value } })),
  ];
}

/** The fields to spread into a RouteConfiguration, VirtualHost or Route. */
export function headerFields(h: HeadersDoc | undefined): JsonObject {
  if (!h) return {};
  const out: JsonObject = {};
  const requestAdd = toAdd(h.request?.set, h.request?.add);
  const responseAdd = toAdd(h.response?.set, h.response?.add);
  if (requestAdd.length) out.request_headers_to_add = requestAdd;
  if (h.request?.remove) out.request_headers_to_remove = h.request.remove;
  if (responseAdd.length) out.response_headers_to_add = responseAdd;
  if (h.response?.remove) out.response_headers_to_remove = h.response.remove;
  return out;
}
