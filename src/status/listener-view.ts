/**
 * What each listener served to a group is, read from the Envoy resource itself (so it shows what
 * proxies get): HTTP, TCP, TLS passthrough only, or a proxyless gRPC target; where it listens;
 * whether it terminates TLS; the server names passed through; the protections in its chain.
 */
import type { JsonObject } from '../features/kit/envoy-json.ts';
import { isGrpcServerListener } from '../translate/grpc-server.ts';

export interface ListenerView {
  name: string;
  kind: 'http' | 'tcp' | 'passthrough' | 'grpc' | 'grpc-server';
  /** address:port; absent for a proxyless gRPC target. */
  address?: string;
  tls: boolean;
  passthrough: string[];
  /** Envoy filters before routing or proxying (rbac, jwt_authn, ext_authz, local_ratelimit, ratelimit). */
  protections: string[];
}

const NAME_OF: Readonly<Record<string, string>> = {
  'envoy.filters.http.rbac': 'rbac',
  'envoy.filters.http.rbac.deny': 'rbac',
  'envoy.filters.http.rbac.allow': 'rbac',
  'envoy.filters.network.rbac': 'rbac',
  'envoy.filters.http.jwt_authn': 'jwt_authn',
  'envoy.filters.http.ext_authz': 'ext_authz',
  'envoy.filters.http.local_ratelimit': 'local_ratelimit',
  'envoy.filters.http.ratelimit': 'ratelimit',
};

type Chain = { filter_chain_match?: { server_names?: string[]; transport_protocol?: string }; filters?: JsonObject[] };

export function listenerView(l: JsonObject): ListenerView {
  const name = l.name as string;
  if (l.api_listener) return { name, kind: 'grpc', tls: false, passthrough: [], protections: [] };
  const chains = (l.filter_chains ?? []) as (Chain & { transport_socket?: unknown })[];
  const isPassthrough = (c: Chain) => c.filter_chain_match?.transport_protocol === 'tls';
  const passthrough = chains.filter(isPassthrough).flatMap((c) => c.filter_chain_match?.server_names ?? []);
  const own = chains.filter((c) => !isPassthrough(c));
  const filters = own.flatMap((c) => c.filters ?? []);
  const hcm = filters.find((f) => f.name === 'envoy.filters.network.http_connection_manager');
  const chainFilters = [
    ...filters,
    ...(((hcm?.typed_config as JsonObject | undefined)?.http_filters ?? []) as JsonObject[]),
  ];
  const protections = [...new Set(chainFilters.flatMap((f) => NAME_OF[f.name as string] ?? []))];
  const socket = (l.address as { socket_address?: { address?: string; port_value?: number } } | undefined)
    ?.socket_address;
  return {
    name,
    kind: isGrpcServerListener(name) ? 'grpc-server' : hcm ? 'http' : own.length ? 'tcp' : 'passthrough',
    address: socket && `${socket.address}:${socket.port_value}`,
    tls: own.some((c) => c.transport_socket !== undefined),
    passthrough,
    protections,
  };
}
