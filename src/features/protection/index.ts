/**
 * Edge protection: who may send requests (client addresses, client certificate names), JWT
 * authentication, external authorization, local and global rate limits.
 */
import { defineFeature } from '../kit/feature.ts';
import { checkCarriedProtection, checkListenerProtection, checkOverrides, trustsForwardedAddress } from './checks.ts';
import {
  protectionFields,
  type ProtectionListener,
  type ProtectionRoute,
  type ProtectionVirtualHost,
} from './schema.ts';
import {
  FILTER,
  networkRbacFilter,
  perFilterConfig,
  protectionFilters,
  protectionServices,
  protectionsUsed,
  routeRateLimits,
  virtualHostRateLimits,
} from './translate.ts';

export const protection = defineFeature<
  ProtectionListener,
  ProtectionVirtualHost,
  ProtectionRoute,
  unknown,
  typeof protectionFields
>({
  name: 'protection',
  docs: 'edge-protection.md#edge-protection',
  fields: protectionFields,
  grpc: {
    kind: 'envoy-only',
    why: "HTTP filters of Envoy's listeners; gRPC servers take their own access rules (GrpcServer.access)",
  },
  checks: {
    listener: checkListenerProtection,
    virtualHost: (v, c) => checkOverrides(v, [], c),
    route: (r, path, c) => checkOverrides(r, path, c),
    carried: checkCarriedProtection,
  },
  http: {
    phase: 'protection',
    filters: (l, vhosts) => protectionFilters(l, protectionsUsed(vhosts)),
    perFilterConfig: (o, forwarded) => perFilterConfig(o, forwarded),
    // Token providers, the authorization server and the rate limit service are the listener's;
    // access rules and local limits are per route (route configurations) already.
    discovered: [FILTER.jwt, FILTER.extAuth, FILTER.rateLimit],
  },
  // Limits and hashes keyed by the client's address read Envoy's downstream remote address, which
  // Envoy takes from x-forwarded-for unless use_remote_address is on: a listener that uses them and
  // trusts no forwarding proxy takes the connection's address. What the operator set is kept.
  connectionManager: (l, vhosts) =>
    protectionsUsed(vhosts).clientAddress && l.http?.useRemoteAddress === undefined && !trustsForwardedAddress(l)
      ? { use_remote_address: true }
      : undefined,
  // Who may connect is checked before the TCP proxy picks a service.
  networkFilters: (l) => (l.access ? [networkRbacFilter(l.name, l.access)] : []),
  virtualHostFields: (v) => {
    const limits = virtualHostRateLimits(v);
    return limits.length ? { rate_limits: limits } : undefined;
  },
  routeAction: (r, v) => {
    const limits = routeRateLimits(r, virtualHostRateLimits(v));
    return limits ? { rate_limits: limits } : undefined;
  },
  services: protectionServices,
});
