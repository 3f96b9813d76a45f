/**
 * Edge protection in the YAML model: who may send requests (client addresses, client certificate
 * names), JWT authentication, external authorization and rate limits, at listener, virtual host
 * and route level (the most specific level wins; `false` turns a protection off below a level that
 * sets it), and the names an upstream's certificate must carry.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Duration, Enum, Name, PositiveInt, strict } from '../kit/schema-primitives.ts';

const Cidr = Type.String({
  minLength: 2,
  maxLength: 64,
  description: 'An IP address or a CIDR block: 10.0.0.0/8, 192.0.2.7, 2001:db8::/32.',
});

/** How a name in a certificate is matched: one of exact, prefix, suffix, glob (`*` and `?`). */
const NameMatchFields = {
  exact: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  suffix: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  glob: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1024, description: '`*` any run of characters, `?` one character.' }),
  ),
};

/** A subject alternative name an upstream's certificate must present. */
export const SanMatch = Type.Object(
  {
    type: Enum(['dns', 'uri'] as const, 'DNS name or URI (SPIFFE ids are URIs).'),
    ...NameMatchFields,
  },
  strict,
);

/** A client certificate name: its URI SANs when it has any, else its DNS SANs, else its subject. */
export const ClientName = Type.Object(NameMatchFields, strict);

export const Access = Type.Object(
  {
    allow: Type.Optional(
      Type.Array(Cidr, {
        minItems: 1,
        maxItems: 1024,
        description: 'Only clients from these addresses (the address Envoy sees, after trusted x-forwarded-for hops).',
      }),
    ),
    deny: Type.Optional(
      Type.Array(Cidr, { minItems: 1, maxItems: 1024, description: 'Clients from these addresses are refused.' }),
    ),
    clientNames: Type.Optional(
      Type.Array(ClientName, {
        minItems: 1,
        maxItems: 256,
        description: 'mTLS listeners: only client certificates with one of these names.',
      }),
    ),
    mode: Type.Optional(
      Enum(
        ['enforce', 'shadow'] as const,
        'enforce (default) refuses with 403 (TCP: closes); shadow only counts and logs what it would refuse.',
      ),
    ),
  },
  { ...strict, description: 'Who may send requests: client addresses and client certificate names.' },
);

const JwtRemoteKeys = Type.Object(
  {
    service: Name,
    path: Type.String({ pattern: '^/', maxLength: 2048 }),
    host: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: 'Host of the URL (default: the service name).' }),
    ),
    https: Type.Optional(Type.Boolean({ description: 'The URL scheme (the service carries its own tls settings).' })),
    cacheDuration: Type.Optional(Duration),
    timeout: Type.Optional(Duration),
  },
  strict,
);

export const JwtProvider = Type.Object(
  {
    name: Name,
    issuer: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    audiences: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1 })),
    keys: Type.Object(
      {
        inline: Type.Optional(
          Type.String({ minLength: 2, maxLength: 262144, description: 'A JWKS (JSON) of public keys.' }),
        ),
        file: Type.Optional(Type.String({ pattern: '^/', description: 'A JWKS file on the proxy host.' })),
        remote: Type.Optional(JwtRemoteKeys),
      },
      { ...strict, description: 'Where the verification keys are: one of inline, file and remote.' },
    ),
    from: Type.Optional(
      Type.Object(
        {
          headers: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  name: Type.String({ minLength: 1, maxLength: 256 }),
                  prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
                },
                strict,
              ),
              { minItems: 1 },
            ),
          ),
          query: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1 })),
          cookies: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1 })),
        },
        { ...strict, description: 'Where the token is read (default: Authorization: Bearer).' },
      ),
    ),
    forward: Type.Optional(Type.Boolean({ description: 'Keep the token in the request to the backend.' })),
    payloadHeader: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'The verified payload (base64url) in this header.' }),
    ),
    claimHeaders: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String({ minLength: 1, maxLength: 256 }), {
        description: 'Header -> claim: the claim of a verified token sent to the backend in the header.',
      }),
    ),
    clockSkew: Type.Optional(Duration),
  },
  strict,
);

export const JwtRequirement = Type.Object(
  {
    require: Type.Array(Name, {
      minItems: 1,
      uniqueItems: true,
      description: 'A token from any of these providers.',
    }),
    optional: Type.Optional(
      Type.Boolean({ description: 'A request without a token passes; one with a bad token is refused.' }),
    ),
  },
  strict,
);

export const Jwt = Type.Object(
  {
    providers: Type.Array(JwtProvider, { minItems: 1, maxItems: 32 }),
    require: Type.Optional(JwtRequirement.properties.require),
    optional: Type.Optional(JwtRequirement.properties.optional),
  },
  {
    ...strict,
    description: 'JWT authentication: the providers this listener knows and, with `require`, its default rule.',
  },
);

export const ExtAuth = Type.Object(
  {
    service: Name,
    protocol: Type.Optional(
      Enum(['grpc', 'http'] as const, "grpc: Envoy's authorization API; http: the request is sent on (default grpc)."),
    ),
    pathPrefix: Type.Optional(Type.String({ pattern: '^/', description: 'http: prefixed to the checked path.' })),
    timeout: Type.Optional(Duration),
    failOpen: Type.Optional(
      Type.Boolean({ description: 'Let requests through when the server cannot be reached (default false).' }),
    ),
    requestHeaders: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        minItems: 1,
        description: 'http: client headers sent to the server (beside Host, Method, Path, Authorization).',
      }),
    ),
    upstreamHeaders: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        minItems: 1,
        description: "http: headers of the server's OK answer added to the request to the backend.",
      }),
    ),
    clientHeaders: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        minItems: 1,
        description: "http: headers of the server's refusal sent to the client.",
      }),
    ),
    body: Type.Optional(
      Type.Object(
        {
          maxBytes: Type.Integer({ minimum: 1, maximum: 1048576 }),
          partial: Type.Optional(Type.Boolean({ description: 'Send the first maxBytes of a larger body.' })),
        },
        { ...strict, description: 'Send the request body to the server.' },
      ),
    ),
  },
  { ...strict, description: 'External authorization: every request is checked by a service first.' },
);

export const RateLimit = Type.Object(
  {
    requests: PositiveInt,
    per: Duration,
    burst: Type.Optional({ ...PositiveInt, description: 'The bucket size (default: requests).' }),
    by: Type.Optional(
      Type.Union(
        [
          Type.Literal('all'),
          Type.Literal('connection'),
          Type.Literal('clientAddress'),
          Type.Object({ header: Type.String({ minLength: 1, maxLength: 256 }) }, strict),
        ],
        {
          description:
            'One bucket for all requests where it is set (default), per client connection, per client address, ' +
            'or per value of a header.',
        },
      ),
    ),
    status: Type.Optional(
      Type.Union([Type.Literal(429), Type.Literal(503), Type.Literal(403)], {
        description: 'The answer to a limited request (default 429).',
      }),
    ),
    headers: Type.Optional(Type.Boolean({ description: 'x-ratelimit-limit/-remaining/-reset (default true).' })),
  },
  { ...strict, description: 'Local rate limit: a token bucket in each proxy.' },
);

export const RateLimitService = Type.Object(
  {
    service: Name,
    domain: Type.String({ minLength: 1, maxLength: 256 }),
    failOpen: Type.Optional(
      Type.Boolean({ description: 'Let requests through when the service cannot answer (default true).' }),
    ),
    timeout: Type.Optional(Duration),
  },
  { ...strict, description: "Global rate limits: Envoy's rate-limit service protocol, spoken by this service." },
);

const DescriptorEntry = Type.Object(
  {
    clientAddress: Type.Optional(Type.Literal(true)),
    header: Type.Optional(
      Type.Object(
        {
          name: Type.String({ minLength: 1, maxLength: 256 }),
          key: Type.String({ minLength: 1, maxLength: 256 }),
        },
        strict,
      ),
    ),
    path: Type.Optional(Type.Literal(true)),
    generic: Type.Optional(
      Type.Object(
        {
          key: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
          value: Type.String({ minLength: 1, maxLength: 256 }),
        },
        strict,
      ),
    ),
  },
  { ...strict, description: 'One of clientAddress, header, path and generic.' },
);

export const GlobalRateLimit = Type.Array(
  Type.Array(DescriptorEntry, { minItems: 1, maxItems: 8, description: 'One descriptor: its entries in order.' }),
  {
    minItems: 1,
    maxItems: 16,
    description: "Descriptors sent to the listener's rateLimitService for each request here.",
  },
);

export type AccessDoc = Static<typeof Access>;
export type JwtDoc = Static<typeof Jwt>;
export type JwtProviderDoc = Static<typeof JwtProvider>;
export type JwtRequirementDoc = Static<typeof JwtRequirement>;
export type ExtAuthDoc = Static<typeof ExtAuth>;
export type RateLimitDoc = Static<typeof RateLimit>;
export type RateLimitServiceDoc = Static<typeof RateLimitService>;
export type GlobalRateLimitDoc = Static<typeof GlobalRateLimit>;
export type SanMatchDoc = Static<typeof SanMatch>;
export type ClientNameDoc = Static<typeof ClientName>;

const Off = (what: string) => Type.Literal(false, { description: what });

export const protectionFields = {
  listener: {
    access: Type.Optional(Access),
    jwt: Type.Optional(Jwt),
    extAuth: Type.Optional(ExtAuth),
    rateLimit: Type.Optional(RateLimit),
    rateLimitService: Type.Optional(RateLimitService),
  },
  virtualHost: overrideFields(),
  route: overrideFields(),
} as const;

/** What a virtual host or route sets for the listener's protections, or turns off (`false`). */
function overrideFields() {
  return {
    access: Type.Optional(Type.Union([Access, Type.Literal(false)])),
    jwt: Type.Optional(Type.Union([JwtRequirement, Type.Literal(false)])),
    extAuth: Type.Optional(Off('No external authorization here.')),
    rateLimit: Type.Optional(Type.Union([RateLimit, Type.Literal(false)])),
    globalRateLimit: Type.Optional(GlobalRateLimit),
  };
}

/** What edge protection reads of a listener: its own fields, and how it takes client addresses. */
export interface ProtectionListener {
  readonly name: string;
  readonly access?: AccessDoc;
  readonly jwt?: JwtDoc;
  readonly extAuth?: ExtAuthDoc;
  readonly rateLimit?: RateLimitDoc;
  readonly rateLimitService?: RateLimitServiceDoc;
  readonly tls?: { readonly clientCa?: string };
  readonly tcp?: unknown;
  readonly virtualHosts?: readonly string[];
  readonly passthrough?: readonly unknown[];
  readonly http?: { readonly xffNumTrustedHops?: number; readonly useRemoteAddress?: boolean };
}

/** A route configuration's, virtual host's or route's protections. */
export interface ProtectionOverrides {
  readonly access?: AccessDoc | false;
  readonly jwt?: JwtRequirementDoc | false;
  readonly extAuth?: false;
  readonly rateLimit?: RateLimitDoc | false;
  readonly globalRateLimit?: GlobalRateLimitDoc;
}

/** A route's protections, and its hashes (a hash by source address keys by client address too). */
export interface ProtectionRoute extends ProtectionOverrides {
  readonly hashPolicy?: readonly { readonly sourceIp?: boolean }[];
}

export interface ProtectionVirtualHost extends ProtectionOverrides {
  readonly routes: readonly ProtectionRoute[];
}
