/**
 * Bounds on what a client may claim about itself. Node ids, clusters and metadata are kept for
 * every stream and poller (and shown by the status API), and metadata is re-read to place the node
 * in a group on every published version: a client must not be able to make them large. Real
 * proxies use short host-like ids and small metadata; anything beyond these limits is refused.
 */
import { MAX_LOCALITY_NAME } from '../features/locality/schema.ts';

export const MAX_NODE_ID = 512;
export const MAX_NODE_CLUSTER = 512;
export const MAX_NODE_METADATA_BYTES = 16 * 1024;
/** Kept for display only: longer user agents are cut, not refused. */
export const MAX_USER_AGENT = 200;

/** Region, zone and sub-zone names are bounded as endpoints' are: a node's locality only picks among those. */
export function nodeLimitViolation(node: {
  id: string;
  cluster?: string;
  metadata?: Record<string, unknown>;
  locality?: { region: string; zone: string; subZone: string };
}): string | undefined {
  if (node.id.length > MAX_NODE_ID)
    return `node.id is ${node.id.length} characters; at most ${MAX_NODE_ID} are accepted`;
  if ((node.cluster ?? '').length > MAX_NODE_CLUSTER)
    return `node.cluster is longer than ${MAX_NODE_CLUSTER} characters`;
  const l = node.locality;
  if (l && Math.max(l.region.length, l.zone.length, l.subZone.length) > MAX_LOCALITY_NAME)
    return `node.locality names a region, zone or sub-zone longer than ${MAX_LOCALITY_NAME} characters`;
  const meta = node.metadata ? JSON.stringify(node.metadata).length : 0;
  if (meta > MAX_NODE_METADATA_BYTES)
    return `node.metadata is ${meta} bytes as JSON; at most ${MAX_NODE_METADATA_BYTES} are accepted`;
  return undefined;
}

export function displayUserAgent(ua: string): string {
  return ua.length > MAX_USER_AGENT ? `${ua.slice(0, MAX_USER_AGENT)}…` : ua;
}

/**
 * What a node says it runs, as the status shows it: its user_agent_name and version, the version
 * taken from user_agent_build_version when it sends none (Envoy does that), e.g. `envoy/1.40.0`.
 */
export function userAgentText(name: unknown, version: unknown, build: unknown): string {
  return [name, version || buildVersionText(build)].filter((p) => typeof p === 'string' && p !== '').join('/');
}

/**
 * `major.minor.patch` of a node's user_agent_build_version (Envoy sends that, not
 * user_agent_version), in either JSON spelling; undefined unless the numbers are whole.
 */
export function buildVersionText(build: unknown): string | undefined {
  const v = (build as { version?: Record<string, unknown> } | null | undefined)?.version;
  if (!v || typeof v !== 'object') return undefined;
  const part = (snake: string, camel: string) => {
    const n = v[snake] ?? v[camel] ?? 0;
    return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < 2 ** 32 ? String(n) : undefined;
  };
  const parts = [part('major_number', 'majorNumber'), part('minor_number', 'minorNumber'), part('patch', 'patch')];
  return parts.every((p) => p !== undefined) ? parts.join('.') : undefined;
}
