/**
 * An xDS-enabled gRPC server (gRFC A36) as the Listener the application asks for: named by the
 * bootstrap's `server_listener_resource_name_template` with the address it binds, one filter chain
 * whose connection manager holds its routes inline (every RPC served: `non_forwarding_action`), the
 * access rules as RBAC filters (gRFC A41: a DENY filter, then an ALLOW filter) and TLS from the
 * application's certificate providers (gRFC A29).
 */
import type { GrpcAccessRuleDoc, GrpcServerDoc } from '../model/schema.ts';
import { cidrRange } from '../shared/addresses.ts';
import { headerMatcher, providerInstance, routerFilter, TYPE } from './common.ts';
import { type JsonObject } from '../features/kit/envoy-json.ts';
import {
  allPermissions,
  allPrincipals,
  anyPermission,
  anyPrincipal,
  certificateNamed,
} from '../features/protection/translate.ts';

/**
 * The template fleetxds writes into every gRPC bootstrap, as gRPC's own examples spell it; `%s` is
 * the address the server binds, `IP:port`.
 */
export const GRPC_SERVER_LISTENER_TEMPLATE = 'grpc/server?xds.resource.listening_address=%s';
const LISTENER_PREFIX = GRPC_SERVER_LISTENER_TEMPLATE.slice(0, GRPC_SERVER_LISTENER_TEMPLATE.indexOf('%s'));

/** The address a GrpcServer binds: its IP (0.0.0.0 by default) and port. */
export function grpcServerAddress(s: GrpcServerDoc): string {
  const ip = s.address ?? '0.0.0.0';
  return `${ip.includes(':') ? `[${ip}]` : ip}:${s.port}`;
}

/** The Listener name a server binding `address` (IP:port) asks for. */
export function grpcServerListenerName(s: GrpcServerDoc): string {
  return GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', grpcServerAddress(s));
}

/** Whether a Listener is a gRPC server's: only an application that names it gets it, never Envoy. */
export function isGrpcServerListener(name: string): boolean {
  return name.startsWith(LISTENER_PREFIX);
}

function methodPermission(pattern: string): JsonObject {
  const [service, method] = pattern.split('/') as [string, string];
  return { url_path: { path: method === '*' ? { prefix: `/${service}/` } : { exact: `/${service}/${method}` } } };
}

/** A rule as one RBAC policy: what the RPC is (permissions) and who sends it (principals), all given parts. */
function policy(rule: GrpcAccessRuleDoc): JsonObject {
  const what: JsonObject[] = [];
  if (rule.methods) what.push(anyPermission(rule.methods.map(methodPermission)));
  for (const h of rule.headers ?? []) what.push({ header: headerMatcher(h) });
  const who: JsonObject[] = [];
  if (rule.principals) who.push(certificateNamed(rule.principals));
  if (rule.addresses) who.push(anyPrincipal(rule.addresses.map((c) => ({ direct_remote_ip: cidrRange(c) }))));
  return { permissions: [allPermissions(what)], principals: [allPrincipals(who)] };
}

function rbacFilter(action: 'deny' | 'allow', rules: readonly GrpcAccessRuleDoc[]): JsonObject {
  const policies: JsonObject = {};
  rules.forEach((r, i) => (policies[r.name ?? `${action}-${i}`] = policy(r)));
  // ALLOW is the enum's zero value: canonical JSON leaves it out.
  return {
    name: `envoy.filters.http.rbac.${action}`,
    typed_config: { '@type': TYPE.rbac, rules: { ...(action === 'deny' && { action: 'DENY' }), policies } },
  };
}

function downstreamTls(tls: NonNullable<GrpcServerDoc['tls']>): JsonObject {
  const common: JsonObject = { tls_certificate_provider_instance: providerInstance(tls.secret) };
  const ctx: JsonObject = { '@type': TYPE.downstreamTls, common_tls_context: common };
  if (tls.clientCa) {
    common.validation_context = { ca_certificate_provider_instance: providerInstance(tls.clientCa) };
    ctx.require_client_certificate = true;
  }
  return { name: 'envoy.transport_sockets.tls', typed_config: ctx };
}

export function buildGrpcServerListener(s: GrpcServerDoc): JsonObject {
  const filters = [
    ...(s.access?.deny ? [rbacFilter('deny', s.access.deny)] : []),
    ...(s.access?.allow ? [rbacFilter('allow', s.access.allow)] : []),
    routerFilter(),
  ];
  const hcm = {
    '@type': TYPE.hcm,
    stat_prefix: s.name,
    route_config: {
      name: s.name,
      virtual_hosts: [
        { name: s.name, domains: ['*'], routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }] },
      ],
    },
    http_filters: filters,
  };
  const ip = s.address ?? '0.0.0.0';
  return {
    name: grpcServerListenerName(s),
    address: { socket_address: { address: ip, port_value: s.port } },
    filter_chains: [
      {
        name: s.name,
        filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: hcm }],
        ...(s.tls && { transport_socket: downstreamTls(s.tls) }),
      },
    ],
  };
}
