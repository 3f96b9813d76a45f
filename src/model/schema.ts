/**
 * The operator-facing YAML model, v1. One source of truth: these TypeBox schemas are the JSON
 * Schema published for editors (`fleetxds schema`), the validator's first pass, and the static
 * types the rest of the code uses. Every object forbids unknown properties.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';

import { Duration, Enum, Name, NAME_PATTERN, NonEmpty, Port, strict } from '../features/kit/schema-primitives.ts';
import { GRPC_STATUS_CODES } from '../features/kit/grpc-status.ts';
import { ClientName, SanMatch } from '../features/protection/schema.ts';
import { LocalityName, LocalitySelect } from '../features/locality/schema.ts';
import { expiryFields } from '../features/kit/deadline.ts';
import { RegexRewrite } from './traffic-schema.ts';
import { LISTENER_FIELDS, ROUTE_FIELDS, SERVICE_FIELDS, VIRTUAL_HOST_FIELDS } from '../features/registry.ts';
import { EnvoyPatch } from './patch-schema.ts';

export { Duration, Name, NAME_PATTERN };

const Groups = Type.Array(Name, {
  minItems: 1,
  uniqueItems: true,
  description: 'Node groups that receive this resource. Default: [default].',
});

// ---------------------------------------------------------------------------------------------
// Service (an upstream cluster)

export const Endpoint = Type.Object(
  {
    address: Type.String({
      minLength: 3,
      description: 'IP:port, e.g. 10.0.0.7:8080 or [2001:db8::7]:8080. Use `dns` for host names.',
    }),
    weight: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000000, description: 'Relative load-balancing weight (default 1).' }),
    ),
    region: Type.Optional(LocalityName),
    zone: Type.Optional(LocalityName),
    subZone: Type.Optional(LocalityName),
    priority: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 127,
        description: 'Failover priority; 0 is used first. Priorities must be contiguous.',
      }),
    ),
  },
  strict,
);

export const UpstreamTls = Type.Object(
  {
    sni: Type.Optional(NonEmpty),
    caFile: Type.Optional(
      Type.String({ minLength: 1, description: 'CA bundle path on the proxy host used to verify the upstream.' }),
    ),
    caSecret: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$',
        description: 'A CA-only Secret, delivered over SDS, to verify the upstream.',
      }),
    ),
    clientSecret: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$',
        description: 'A certificate Secret presented to the upstream (mTLS).',
      }),
    ),
    subjectAltNames: Type.Optional(
      Type.Array(SanMatch, {
        minItems: 1,
        maxItems: 64,
        description:
          "Names the upstream's certificate must carry (one of them); without them any certificate the CA " +
          'signed is accepted.',
      }),
    ),
  },
  strict,
);

/** Who may add endpoints to a service at run time, and for how long an endpoint stays without news. */
export const Registration = Type.Object(
  {
    identities: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 512 }), {
        minItems: 1,
        description: 'Client certificate names (URI or DNS SANs) allowed to register, as globs (* and ?).',
      }),
    ),
    tokens: Type.Optional(
      Type.Array(Type.String({ pattern: '^[0-9a-f]{64}$' }), {
        minItems: 1,
        description: 'sha256 (hex) of bearer tokens allowed to register into this service (fleetxds token).',
      }),
    ),
    addresses: Type.Optional(
      Type.Array(Type.String({ minLength: 2, maxLength: 64 }), {
        minItems: 1,
        description: 'CIDR blocks registered endpoints must be in (default: any).',
      }),
    ),
    ports: Type.Optional(
      Type.Array(Port, { minItems: 1, uniqueItems: true, description: 'Allowed ports (default any).' }),
    ),
    ttl: Type.Optional({
      ...Duration,
      description: 'Without a heartbeat for this long an endpoint is unhealthy, and removed after as long again (30s).',
    }),
    drain: Type.Optional({ ...Duration, description: 'A draining endpoint is removed after this long (30s).' }),
    ownAddress: Type.Optional(
      Type.Boolean({
        description:
          "An endpoint's address must be the caller's own: its connection's address or an IP SAN of its " +
          'client certificate.',
      }),
    ),
    manageEachOther: Type.Optional(
      Type.Boolean({
        description:
          'Any allowed identity may heartbeat, drain or remove endpoints another one registered ' +
          '(default: only the identity that registered an endpoint manages it).',
      }),
    ),
  },
  { ...strict, description: 'Endpoints registered at run time (fleetxds register), besides the static ones.' },
);

export const Service = Type.Object(
  {
    kind: Type.Literal('Service'),
    name: Name,
    description: Type.Optional(Type.String()),
    protocol: Type.Optional(
      Enum(['http1', 'http2', 'grpc'] as const, 'Upstream protocol (default http1). grpc implies HTTP/2.'),
    ),
    endpoints: Type.Optional(Type.Array(Endpoint, { description: 'Static endpoints, served to proxies through EDS.' })),
    dns: Type.Optional(
      Type.Object(
        {
          host: Type.String({ pattern: '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' }),
          port: Port,
          mode: Type.Optional(
            Enum(
              ['strict', 'logical'] as const,
              'STRICT_DNS (every address) or LOGICAL_DNS (first address); default strict.',
            ),
          ),
          refreshRate: Type.Optional(Duration),
        },
        strict,
      ),
    ),
    connectTimeout: Type.Optional(Duration),
    ...SERVICE_FIELDS,
    tls: Type.Optional(UpstreamTls),
    registration: Type.Optional(Registration),
    aggregate: Type.Optional(
      Type.Array(Name, {
        minItems: 2,
        maxItems: 16,
        uniqueItems: true,
        description:
          'Failover across other services, in order: requests go to the first one with healthy endpoints ' +
          '(an aggregate cluster, for Envoy and gRPC clients, gRFC A37). Such a service has no endpoints of its own.',
      }),
    ),
  },
  strict,
);

// ---------------------------------------------------------------------------------------------
// Routes (shared by VirtualHost and GrpcService)

const StringMatchFields = {
  exact: Type.Optional(Type.String()),
  prefix: Type.Optional(Type.String({ minLength: 1 })),
  regex: Type.Optional(Type.String({ minLength: 1, description: 'RE2 syntax.' })),
};

export const HeaderMatch = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    ...StringMatchFields,
    present: Type.Optional(Type.Boolean()),
    invert: Type.Optional(Type.Boolean()),
  },
  strict,
);

export const QueryMatch = Type.Object(
  { name: Type.String({ minLength: 1 }), ...StringMatchFields, present: Type.Optional(Type.Boolean()) },
  strict,
);

export const RouteMatch = Type.Object(
  {
    prefix: Type.Optional(Type.String({ pattern: '^/', description: 'Path prefix (default "/").' })),
    path: Type.Optional(Type.String({ pattern: '^/' })),
    regex: Type.Optional(Type.String({ minLength: 1, description: 'Whole-path RE2 regex.' })),
    caseSensitive: Type.Optional(Type.Boolean()),
    headers: Type.Optional(Type.Array(HeaderMatch)),
    query: Type.Optional(Type.Array(QueryMatch)),
  },
  strict,
);

export const WeightedTarget = Type.Object(
  { service: Name, weight: Type.Integer({ minimum: 0, maximum: 1000000 }) },
  strict,
);

const HeaderEdits = Type.Object(
  {
    set: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 8192 }), {
        description: 'Headers set, replacing any of the same name; values may use Envoy format operators.',
      }),
    ),
    add: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ maxLength: 8192 }), {
        description: 'Headers added beside any of the same name.',
      }),
    ),
    remove: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1, uniqueItems: true }),
    ),
  },
  strict,
);

/**
 * What a request is hashed on for a service with lb ring_hash or maglev (affinity): one of a header,
 * a cookie (Envoy sets it when absent, with a ttl), the client's address, or a query parameter.
 * Several are tried in order; `terminal` stops at the first that yields a hash.
 */
export const HashPolicy = Type.Object(
  {
    header: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    cookie: Type.Optional(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 256 }),
          ttl: Type.Optional(Duration),
          path: Type.Optional(Type.String({ pattern: '^/' })),
        },
        strict,
      ),
    ),
    sourceIp: Type.Optional(Type.Literal(true)),
    query: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    terminal: Type.Optional(Type.Boolean()),
  },
  strict,
);

/** Request and response headers set, added or removed (route, virtual host or listener level). */
export const Headers = Type.Object(
  { request: Type.Optional(HeaderEdits), response: Type.Optional(HeaderEdits) },
  strict,
);

/** An HTTP listener's connection manager: client addresses, time limits, paths, protocol tuning. */
/** A TCP listener's proxying (Envoy's tcp_proxy): to one service, or split by weight. */
export const TcpProxy = Type.Object(
  {
    to: Type.Optional(Name),
    split: Type.Optional(
      Type.Array(WeightedTarget, { minItems: 1, description: 'Weighted services, per connection.' }),
    ),
    idleTimeout: Type.Optional(Duration),
    maxConnectAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
  },
  { ...strict, description: 'TCP: every connection to this port goes to a service (one of virtualHosts and tcp).' },
);

export const Retries = Type.Object(
  {
    on: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description:
        'Envoy retry_on conditions (5xx, reset, connect-failure, ...) or, for gRPC, status names (unavailable, ...).',
    }),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    perTryTimeout: Type.Optional(Duration),
    backoff: Type.Optional(
      Type.Object(
        { base: Duration, max: Type.Optional(Duration) },
        { ...strict, description: 'Exponential backoff between tries (default max: 10 x base).' },
      ),
    ),
    statusCodes: Type.Optional(
      Type.Array(Type.Integer({ minimum: 100, maximum: 599 }), {
        minItems: 1,
        uniqueItems: true,
        description: 'HTTP: responses with these statuses are retried too.',
      }),
    ),
    retryOtherHosts: Type.Optional(
      Type.Boolean({ description: 'HTTP: a retry goes to a host not tried yet for the request.' }),
    ),
    hostSelectionAttempts: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10, description: 'HTTP: tries at picking such a host.' }),
    ),
    retriableHeaders: Type.Optional(
      Type.Array(HeaderMatch, {
        minItems: 1,
        maxItems: 16,
        description: 'HTTP: responses with one of these headers are retried too.',
      }),
    ),
  },
  strict,
);

export const Route = Type.Object(
  {
    name: Type.Optional(Name),
    match: Type.Optional(RouteMatch),
    to: Type.Optional(Name),
    split: Type.Optional(Type.Array(WeightedTarget, { minItems: 1, description: 'Weighted services (canary split).' })),
    redirect: Type.Optional(
      Type.Object(
        {
          host: Type.Optional(Type.String({ minLength: 1 })),
          path: Type.Optional(Type.String({ pattern: '^/' })),
          https: Type.Optional(Type.Boolean()),
          port: Type.Optional(Port),
          prefix: Type.Optional(
            Type.String({ pattern: '^/', description: "Replaces the matched prefix (a route's match.prefix)." }),
          ),
          regex: Type.Optional(RegexRewrite),
          stripQuery: Type.Optional(Type.Boolean({ description: 'Drop the query string.' })),
          code: Type.Optional(
            Type.Union([Type.Literal(301), Type.Literal(302), Type.Literal(303), Type.Literal(307), Type.Literal(308)]),
          ),
        },
        strict,
      ),
    ),
    directResponse: Type.Optional(
      Type.Object(
        { status: Type.Integer({ minimum: 200, maximum: 599 }), body: Type.Optional(Type.String({ maxLength: 4096 })) },
        strict,
      ),
    ),
    timeout: Type.Optional(Duration),
    retries: Type.Optional(Retries),
    headers: Type.Optional(Headers),
    hashPolicy: Type.Optional(Type.Array(HashPolicy, { minItems: 1, maxItems: 8 })),
    rewrite: Type.Optional(
      Type.Object(
        {
          prefix: Type.Optional(Type.String({ pattern: '^/' })),
          regex: Type.Optional(RegexRewrite),
          host: Type.Optional(Type.String({ minLength: 1 })),
          hostFromService: Type.Optional(
            Type.Literal(true, { description: "Host header: the DNS name of the service's endpoint (dns services)." }),
          ),
        },
        strict,
      ),
    ),
    ...ROUTE_FIELDS,
  },
  strict,
);

export const GrpcRouteMatch = Type.Object(
  {
    service: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z_][A-Za-z0-9_.]*$',
        description: 'Fully-qualified gRPC service, e.g. helloworld.Greeter.',
      }),
    ),
    method: Type.Optional(
      Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Method name; needs `service`.' }),
    ),
    prefix: Type.Optional(Type.String({ pattern: '^/' })),
    path: Type.Optional(Type.String({ pattern: '^/' })),
    headers: Type.Optional(Type.Array(HeaderMatch)),
  },
  strict,
);

const FaultPercent = Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'Share of RPCs, in percent.' });

/** Fault injection for proxyless gRPC clients (gRFC A33): the client delays or fails some RPCs itself. */
export const GrpcFault = Type.Object(
  {
    delay: Type.Optional(Type.Object({ fixed: Duration, percent: FaultPercent }, strict)),
    abort: Type.Optional(
      Type.Object(
        {
          status: Enum(
            Object.keys(GRPC_STATUS_CODES) as (keyof typeof GRPC_STATUS_CODES)[],
            'The status the RPC fails with.',
          ),
          percent: FaultPercent,
        },
        strict,
      ),
    ),
  },
  {
    ...strict,
    description:
      'Delay or fail a share of the RPCs, in the client (gRFC A33), to test how callers cope; one of delay and ' +
      'abort at least.',
  },
);

export const GrpcRoute = Type.Object(
  {
    name: Type.Optional(Name),
    match: Type.Optional(GrpcRouteMatch),
    to: Type.Optional(Name),
    split: Type.Optional(Type.Array(WeightedTarget, { minItems: 1 })),
    timeout: Type.Optional(Duration),
    retries: Type.Optional(Retries),
    hashPolicy: Type.Optional(
      Type.Array(
        Type.Object(
          {
            header: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
            channelId: Type.Optional(
              Type.Literal(true, { description: "The client channel's id: each channel sticks to a backend." }),
            ),
            terminal: Type.Optional(Type.Boolean()),
          },
          strict,
        ),
        {
          minItems: 1,
          maxItems: 8,
          description: 'lb ring_hash services: what an RPC is hashed on (gRFC A42); one of header and channelId each.',
        },
      ),
    ),
    fault: Type.Optional(GrpcFault),
  },
  strict,
);

// ---------------------------------------------------------------------------------------------
// Listeners, virtual hosts, proxyless gRPC, secrets, node groups

export const Listener = Type.Object(
  {
    kind: Type.Literal('Listener'),
    name: Name,
    address: Type.Optional(Type.String({ minLength: 1, description: 'Bind address (default 0.0.0.0).' })),
    port: Port,
    groups: Type.Optional(Groups),
    tls: Type.Optional(
      Type.Object(
        {
          secret: Name,
          clientCa: Type.Optional(Name),
          sni: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  serverNames: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, uniqueItems: true }),
                  secret: Name,
                },
                strict,
              ),
              {
                minItems: 1,
                description: 'More certificates on this port, chosen by SNI; `secret` is the default for other names.',
              },
            ),
          ),
        },
        strict,
      ),
    ),
    virtualHosts: Type.Optional(
      Type.Array(Name, {
        minItems: 1,
        uniqueItems: true,
        description: 'HTTP: the virtual hosts of this port (one of virtualHosts and tcp).',
      }),
    ),
    tcp: Type.Optional(TcpProxy),
    headers: Type.Optional(Headers),
    ...LISTENER_FIELDS,
    passthrough: Type.Optional(
      Type.Array(
        Type.Object(
          {
            serverNames: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, uniqueItems: true }),
            to: Name,
          },
          strict,
        ),
        {
          minItems: 1,
          description:
            'TLS passed through untouched, by SNI: connections for these server names go to the service as ' +
            'they are (its own certificate), beside the chains this listener terminates.',
        },
      ),
    ),
  },
  strict,
);

export const VirtualHost = Type.Object(
  {
    kind: Type.Literal('VirtualHost'),
    name: Name,
    domains: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      uniqueItems: true,
      description:
        'Host names (or `*`, `*.example.com`) the routes answer. A request to the port of the listener ' +
        'matches by name: shop.example.com:8443 on a listener of port 8443 is shop.example.com.',
    }),
    routes: Type.Array(Route, { minItems: 1 }),
    headers: Type.Optional(Headers),
    ...VIRTUAL_HOST_FIELDS,
  },
  strict,
);

export const GrpcService = Type.Object(
  {
    kind: Type.Literal('GrpcService'),
    name: Name,
    target: Type.String({
      pattern: '^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$',
      description: 'What clients dial as xds:///<target>, host[:port].',
    }),
    groups: Type.Optional(Groups),
    routes: Type.Array(GrpcRoute, { minItems: 1 }),
  },
  strict,
);

/** A method pattern of an access rule: `package.Service/Method`, or `package.Service/*` for all its methods. */
const GrpcMethodPattern = Type.String({
  pattern: '^[A-Za-z_][A-Za-z0-9_.]*/([A-Za-z_][A-Za-z0-9_]*|\\*)$',
  maxLength: 512,
  description: 'package.Service/Method, or package.Service/* for every method of the service.',
});

/** One rule of a gRPC server's access policy: it matches an RPC when every field it gives matches. */
export const GrpcAccessRule = Type.Object(
  {
    name: Type.Optional(Name),
    principals: Type.Optional(
      Type.Array(ClientName, {
        minItems: 1,
        maxItems: 256,
        description: "The client certificate's name (URI SAN, else DNS SAN, else subject) is one of these (mTLS).",
      }),
    ),
    addresses: Type.Optional(
      Type.Array(Type.String({ minLength: 2, maxLength: 64 }), {
        minItems: 1,
        maxItems: 1024,
        description: 'The client connects from one of these addresses or CIDR blocks.',
      }),
    ),
    methods: Type.Optional(
      Type.Array(GrpcMethodPattern, { minItems: 1, maxItems: 1024, description: 'The RPC is one of these.' }),
    ),
    headers: Type.Optional(
      Type.Array(HeaderMatch, { minItems: 1, maxItems: 32, description: 'The RPC carries all of these metadata.' }),
    ),
  },
  strict,
);

/**
 * An xDS-enabled gRPC server (gRFC A36): the application binds address:port with xDS server
 * credentials and serves only once fleetxds sends its listener; TLS and access rules (gRFC A41)
 * come with it.
 */
export const GrpcServer = Type.Object(
  {
    kind: Type.Literal('GrpcServer'),
    name: Name,
    address: Type.Optional(
      Type.String({ minLength: 2, maxLength: 64, description: 'The IP the application binds (default 0.0.0.0).' }),
    ),
    port: Port,
    groups: Type.Optional(Groups),
    tls: Type.Optional(
      Type.Object(
        {
          secret: Name,
          clientCa: Type.Optional({ ...Name, description: 'Require client certificates this CA signed (mTLS).' }),
        },
        {
          ...strict,
          description:
            "The server's certificate (and the CA of its clients' certificates), read by the application " +
            'from its own files (certificate providers, gRFC A29).',
        },
      ),
    ),
    access: Type.Optional(
      Type.Object(
        {
          deny: Type.Optional(
            Type.Array(GrpcAccessRule, {
              minItems: 1,
              maxItems: 64,
              description: 'An RPC any of these match is refused (PERMISSION_DENIED), before `allow` is asked.',
            }),
          ),
          allow: Type.Optional(
            Type.Array(GrpcAccessRule, {
              minItems: 1,
              maxItems: 64,
              description: 'Only RPCs one of these matches are served; without it every RPC not denied is.',
            }),
          ),
        },
        { ...strict, description: 'Which RPCs the server serves (gRFC A41 RBAC, enforced in the application).' },
      ),
    ),
  },
  strict,
);

const AbsolutePath = Type.String({ pattern: '^/', maxLength: 4096, description: 'An absolute path.' });

export const Secret = Type.Object(
  {
    kind: Type.Literal('Secret'),
    name: Name,
    certificateFile: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'PEM certificate chain (leaf first), on the fleetxds host; relative to the config directory unless absolute.',
      }),
    ),
    privateKeyFile: Type.Optional(
      Type.String({ minLength: 1, description: 'PEM private key matching the certificate; keep it mode 0600.' }),
    ),
    caFile: Type.Optional(
      Type.String({ minLength: 1, description: 'PEM CA bundle (a CA-only Secret, for validating peers).' }),
    ),
    onHost: Type.Optional(
      Type.Object(
        {
          certificateFile: Type.Optional(AbsolutePath),
          privateKeyFile: Type.Optional(AbsolutePath),
          caFile: Type.Optional(AbsolutePath),
        },
        {
          ...strict,
          description:
            'Where proxyless gRPC applications read this secret on their own hosts (their certificate ' +
            'providers watch these files; fleetxds does not read them). Default: the paths above, made absolute.',
        },
      ),
    ),
  },
  strict,
);

export const NodeGroup = Type.Object(
  {
    kind: Type.Literal('NodeGroup'),
    name: Name,
    priority: Type.Optional(
      Type.Integer({ minimum: -1000, maximum: 1000, description: 'Higher is tried first (default 0); ties by name.' }),
    ),
    match: Type.Optional(
      Type.Object(
        {
          cluster: Type.Optional(Type.String({ minLength: 1, description: 'Exact node.cluster.' })),
          idPattern: Type.Optional(Type.String({ minLength: 1, description: 'Glob on node.id: * and ? wildcards.' })),
          metadata: Type.Optional(
            Type.Record(Type.String({ minLength: 1 }), Type.String(), {
              description: 'String equality on node.metadata fields.',
            }),
          ),
          locality: Type.Optional(LocalitySelect),
        },
        strict,
      ),
    ),
    workload: Type.Optional({
      ...Name,
      description:
        "The Service this group's nodes are endpoints of. Their bootstraps name its endpoints as Envoy's local " +
        'cluster, which zone-aware routing (Service.locality.zoneAware) weighs zones by.',
    }),
  },
  strict,
);

/** A runtime key as Envoy names them: dot-separated segments of letters, digits, "_" and "-". */
export const RUNTIME_KEY_PATTERN = '^(?=.{1,256}$)[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$';

export const Runtime = Type.Object(
  {
    kind: Type.Literal('Runtime'),
    name: Name,
    groups: Type.Optional(Groups),
    values: Type.Record(
      Type.String({ pattern: RUNTIME_KEY_PATTERN }),
      Type.Union([Type.Boolean(), Type.Number(), Type.String({ maxLength: 1024 })]),
      {
        additionalProperties: false,
        minProperties: 1,
        maxProperties: 1000,
        description:
          "Envoy runtime keys and their values (true/false, numbers, text), e.g. 'upstream.healthy_panic_threshold' " +
          'or an envoy.reloadable_features flag: one RTDS layer per node group, changed without a listener or ' +
          'cluster update.',
      },
    ),
    ...expiryFields,
  },
  {
    ...strict,
    description:
      "Runtime values for the groups' proxies, served over RTDS (the layer the generated bootstraps declare, " +
      'below the admin layer). A key is set by one Runtime document per group. With until or for, an override: ' +
      'its values sit in a layer above, removed at the deadline and dropped by the proxies themselves if ' +
      'fleetxds is gone; a key may then be set once more, by an override. Envoy only.',
  },
);

export const Guard = Type.Object(
  {
    kind: Type.Literal('Guard'),
    name: Name,
    allowEmpty: Type.Optional(
      Type.Boolean({
        description:
          'This tree may define nothing to serve (no Listener, no GrpcService): every proxy loses every listener.',
      }),
    ),
    maxRemovalPercent: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        description:
          "The largest share of a node group's listeners and clusters one change may remove (default 50). Raise " +
          'it for the one change that means it, then remove it.',
      }),
    ),
  },
  { ...strict, description: 'Safety limits for applying this tree. At most one per tree.' },
);

// ---------------------------------------------------------------------------------------------
// Rollout (staged delivery of each new version)

const StageSelect = Type.Object(
  {
    groups: Type.Optional(
      Type.Array(Name, { minItems: 1, uniqueItems: true, description: 'Node groups of the stage (default: all).' }),
    ),
    idPattern: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Glob on node.id: * and ?.' })),
    locality: Type.Optional(LocalitySelect),
    percent: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 100,
        description:
          'This share of the selected proxies, chosen by a stable hash of node.id (the same proxies every time, ' +
          'and a larger share includes a smaller one).',
      }),
    ),
  },
  { ...strict, description: 'Which proxies the stage holds; a proxy belongs to the first stage that selects it.' },
);

const StageGates = Type.Object(
  {
    ackedPercent: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 100,
        description: "Share of the stage's connected proxies that must ACK every changed type (default 100).",
      }),
    ),
    minProxies: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description: 'Connected proxies the stage needs before it can pass (default 1; 0 lets an empty stage pass).',
      }),
    ),
    soak: Type.Optional({ ...Duration, description: 'How long to wait once the ACK gate holds (default none).' }),
    approval: Type.Optional(
      Type.Literal('manual', { description: 'Wait for `fleetxds rollout promote` after the other gates.' }),
    ),
  },
  { ...strict, description: 'What must hold before the next stage gets the new version.' },
);

export const RolloutStage = Type.Object(
  { name: Name, select: Type.Optional(StageSelect), gates: Type.Optional(StageGates) },
  strict,
);

export const Rollout = Type.Object(
  {
    kind: Type.Literal('Rollout'),
    name: Name,
    stages: Type.Array(RolloutStage, {
      minItems: 1,
      maxItems: 16,
      description:
        'In order. Proxies no stage selects form a last, implicit stage "rest" that gets the version once ' +
        'every stage passed.',
    }),
    onNack: Type.Optional(
      Type.Union([Type.Literal('halt'), Type.Literal('rollback')], {
        description:
          'A NACK from a proxy on the new version halts the rollout; "rollback" also returns that stage to the ' +
          'previous version (default "halt": the stage keeps the new version).',
      }),
    ),
    acceptUnauthenticatedNodes: Type.Optional(
      Type.Boolean({
        description:
          'Count proxies whose node id the transport did not authenticate (no client certificate bound to it, ' +
          'no REST token) in gates, and let their NACKs halt the rollout. Default false: any client could ' +
          'claim a node id and steer the rollout with forged ACKs or NACKs.',
      }),
    ),
  },
  { ...strict, description: 'Staged delivery of every new version. At most one per tree.' },
);

export const KINDS = {
  Service,
  Listener,
  VirtualHost,
  GrpcService,
  GrpcServer,
  Secret,
  NodeGroup,
  Guard,
  Rollout,
  EnvoyPatch,
  Runtime,
} as const satisfies Record<string, TSchema>;

export type KindName = keyof typeof KINDS;
export type ServiceDoc = Static<typeof Service>;
export type ListenerDoc = Static<typeof Listener>;
export type HeadersDoc = Static<typeof Headers>;
export type HashPolicyDoc = Static<typeof HashPolicy>;
export type VirtualHostDoc = Static<typeof VirtualHost>;
export type GrpcServiceDoc = Static<typeof GrpcService>;
export type GrpcServerDoc = Static<typeof GrpcServer>;
export type GrpcAccessRuleDoc = Static<typeof GrpcAccessRule>;
export type SecretDoc = Static<typeof Secret>;
export type NodeGroupDoc = Static<typeof NodeGroup>;
export type GuardDoc = Static<typeof Guard>;
export type RuntimeDoc = Static<typeof Runtime>;
export type RolloutDoc = Static<typeof Rollout>;
export type RolloutStageDoc = Static<typeof RolloutStage>;
export type RouteDoc = Static<typeof Route>;
export type GrpcRouteDoc = Static<typeof GrpcRoute>;
export type RouteMatchDoc = Static<typeof RouteMatch>;
export type HeaderMatchDoc = Static<typeof HeaderMatch>;
export type QueryMatchDoc = Static<typeof QueryMatch>;
export type WeightedTargetDoc = Static<typeof WeightedTarget>;
export type RetriesDoc = Static<typeof Retries>;
export type EndpointDoc = Static<typeof Endpoint>;
export type RegistrationDoc = Static<typeof Registration>;

/** The JSON Schema published for editors (yaml-language-server: `# yaml-language-server: $schema=...`). */
export function publishedJsonSchema(): object {
  const clean = (s: unknown): unknown => JSON.parse(JSON.stringify(s)); // drops TypeBox's symbol keys
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://fleetxds.dev/schema/v1/fleetxds.schema.json',
    title: 'fleetxds service definitions (v1)',
    description:
      'One YAML document per resource; every document has `kind` and `name`. Generated from src/model/schema.ts: ' +
      'do not edit.',
    oneOf: Object.entries(KINDS).map(([kind, schema]) => ({ title: kind, ...(clean(schema) as object) })),
  };
}
