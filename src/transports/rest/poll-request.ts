/** A REST poll's body: a DiscoveryRequest in proto3 JSON, checked against the proto and our bounds. */
import { nodeLocality, type NodeIdentity } from '../../model/node-groups.ts';
import { displayUserAgent, nodeLimitViolation, userAgentText } from '../../security/node-limits.ts';
import { ErrorCodes, FleetError } from '../../shared/errors.ts';
import { nestedDeeperThan } from '../../shared/json-depth.ts';
import { encodeJson } from '../../xds/proto-json.ts';
import { DISCOVERY_REQUEST, TypeUrls, type ResourceKind } from '../../xds/resource-types.ts';

/** Far more than any DiscoveryRequest needs (node metadata is the deepest part); converters recurse. */
const MAX_JSON_DEPTH = 64;

export interface PollRequest {
  node: NodeIdentity & { userAgent: string };
  names: string[];
  version: string;
}

interface JsonNode {
  id?: string;
  cluster?: string;
  metadata?: Record<string, unknown>;
  user_agent_name?: string;
  userAgentName?: string;
  user_agent_version?: string;
  userAgentVersion?: string;
  user_agent_build_version?: unknown;
  userAgentBuildVersion?: unknown;
  locality?: { region?: string; zone?: string; sub_zone?: string; subZone?: string };
}

interface JsonDiscoveryRequest {
  type_url?: string;
  typeUrl?: string;
  node?: JsonNode;
  resource_names?: string[];
  resourceNames?: string[];
  version_info?: string;
  versionInfo?: string;
}

export function parseRequest(body: unknown, kind: ResourceKind): PollRequest {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw new FleetError(ErrorCodes.BAD_REQUEST, 'the body must be a JSON DiscoveryRequest object');
  if (nestedDeeperThan(body, MAX_JSON_DEPTH))
    throw new FleetError(ErrorCodes.BAD_REQUEST, `the body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const { issues } = encodeJson(DISCOVERY_REQUEST, body);
  if (issues.length)
    throw new FleetError(
      ErrorCodes.BAD_REQUEST,
      'invalid DiscoveryRequest: ' +
        issues
          .slice(0, 5)
          .map((i) => `${i.path || '(root)'}: ${i.message}`)
          .join('; '),
    );
  // A DiscoveryRequest in proto3 JSON (checked against the proto above), in either field spelling.
  const b = body as JsonDiscoveryRequest;
  const typeUrl = b.type_url ?? b.typeUrl;
  if (typeUrl && typeUrl !== TypeUrls[kind])
    throw new FleetError(ErrorCodes.BAD_REQUEST, `type_url ${typeUrl} does not match this path (${TypeUrls[kind]})`);
  const node = b.node;
  if (!node?.id) throw new FleetError(ErrorCodes.BAD_REQUEST, 'node.id is required');
  const locality = nodeLocality(node.locality);
  const identity = {
    id: String(node.id),
    cluster: String(node.cluster ?? ''),
    metadata: node.metadata ?? {},
    ...(locality && { locality }),
  };
  const tooLarge = nodeLimitViolation(identity);
  if (tooLarge) throw new FleetError(ErrorCodes.BAD_REQUEST, tooLarge);
  return {
    node: {
      ...identity,
      userAgent: displayUserAgent(
        userAgentText(
          node.user_agent_name ?? node.userAgentName,
          node.user_agent_version ?? node.userAgentVersion,
          node.user_agent_build_version ?? node.userAgentBuildVersion,
        ),
      ),
    },
    names: b.resource_names ?? b.resourceNames ?? [],
    version: String(b.version_info ?? b.versionInfo ?? ''),
  };
}
