/**
 * fleetxds's own settings (config/fleetxds.yaml) as a schema: what each setting accepts, its bounds,
 * its default and what it does. The loader (server-config.ts) takes its types and defaults from
 * here, and the reference page (docs/reference/server-settings.md) is generated from it.
 */
import { Type } from '@sinclair/typebox';

const TokenList = Type.Array(
  Type.Object(
    {
      name: Type.String({ minLength: 1 }),
      sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
      role: Type.Union([Type.Literal('read'), Type.Literal('admin')]),
    },
    { additionalProperties: false },
  ),
  { description: 'Bearer tokens, by sha256 digest (fleetxds token prints a token and its digest).' },
);
/** Bounds of one log table (src/store/retention.ts). */
const LogRetentionFields = {
  rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 36_500 })),
};

export const TlsFiles = Type.Object(
  {
    certFile: Type.String({ minLength: 1 }),
    keyFile: Type.String({ minLength: 1 }),
    clientCaFile: Type.Optional(
      Type.String({ minLength: 1, description: 'Require client certificates signed by this CA (mTLS).' }),
    ),
    identityPrefix: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'URI SAN prefix binding node ids to client certificates, e.g. spiffe://fleet.example/ (needs clientCaFile).',
      }),
    ),
    minVersion: Type.Optional(
      Type.Union([Type.Literal('TLSv1.2'), Type.Literal('TLSv1.3')], {
        description: 'The oldest TLS version accepted (default TLSv1.2).',
      }),
    ),
    ciphers: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          "OpenSSL cipher list for TLS 1.2 connections, e.g. ECDHE-ECDSA-AES256-GCM-SHA384 (default: Node's list).",
      }),
    ),
  },
  { additionalProperties: false },
);
const Listen = Type.String({
  pattern: '^(\\[[0-9a-fA-F:.]+\\]|[^:\\s]+):[0-9]{1,5}$',
  description: 'host:port; port 0 picks a free port',
});

export const RestSchema = Type.Object(
  {
    listen: Listen,
    holdMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 600000,
        description:
          "How long an unchanged poll is held; below Envoy's request_timeout (default 5 s below requestTimeoutMs).",
      }),
    ),
    refreshDelayMs: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 600000,
        default: 1000,
        description: 'refresh_delay of the REST config sources in served resources.',
      }),
    ),
    requestTimeoutMs: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 600000,
        default: 30_000,
        description: 'request_timeout of the REST config sources of proxies that long-poll (above the hold).',
      }),
    ),
    bodyLimit: Type.Optional(Type.Integer({ minimum: 1024, maximum: 67108864, default: 1024 * 1024 })),
    maxHeld: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000000, default: 100_000 })),
    maxCachedBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 17179869184,
        default: 64 * 1024 * 1024,
        description:
          'Response bodies kept per type and version for reuse by other polls, in bytes. ' +
          'What is kept is keyed by what pollers send, so it is bounded; a body past the bound is made for ' +
          'its poll alone.',
      }),
    ),
    pollerExpiryMs: Type.Optional(
      Type.Integer({
        minimum: 100,
        maximum: 86400000,
        description:
          'A REST node silent this long leaves the status (and its subscriptions are forgotten); default ' +
          'max(60 s, twice the hold plus two refresh delays).',
      }),
    ),
    tokens: Type.Optional(TokenList),
    tls: Type.Optional(TlsFiles),
  },
  { additionalProperties: false },
);

export const FilesSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    dir: Type.String({ minLength: 1 }),
    envoyDir: Type.Optional(
      Type.String({ minLength: 1, description: 'The directory as the proxies see it, if different.' }),
    ),
    format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('yaml')], { default: 'json' })),
    layout: Type.Optional(Type.Union([Type.Literal('files'), Type.Literal('watched_directory')], { default: 'files' })),
  },
  { additionalProperties: false },
);

export const WatchSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ default: true })),
    debounceMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60000, default: 200 })),
    maxWaitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600000, default: 2000 })),
    reconcileMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86400000,
        default: 60_000,
        description: 'Full re-read this often, in case inotify dropped events (0 = never).',
      }),
    ),
  },
  { additionalProperties: false, default: {} },
);

export const ServerConfigSchema = Type.Object(
  {
    configDir: Type.String({ minLength: 1, description: 'The operator YAML tree (services, listeners, ...).' }),
    database: Type.String({ minLength: 1, description: 'SQLite file for versions and history.' }),
    grpc: Type.Object(
      {
        listen: Listen,
        maxReceiveBytes: Type.Optional(Type.Integer({ minimum: 65536, maximum: 268435456 })),
        maxUnreadBytes: Type.Optional(
          Type.Integer({
            minimum: 65536,
            maximum: 1073741824,
            description:
              'Responses a stream may leave unread before it is ended with RESOURCE_EXHAUSTED (default 32 MiB).',
          }),
        ),
        maxStreams: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 10_000_000,
            description:
              'Streams this replica serves at most; more are refused with RESOURCE_EXHAUSTED so proxies retry ' +
              'elsewhere (default: no limit).',
          }),
        ),
        maxConnectionAgeMs: Type.Optional(
          Type.Integer({
            minimum: 1000,
            maximum: 604_800_000,
            description:
              'Connections older than this (with ±10% jitter) are asked to go away, so proxies spread again over ' +
              'the replicas, e.g. after one restarted (default: never).',
          }),
        ),
        maxConnectionAgeGraceMs: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: 3_600_000,
            description: 'After the GOAWAY, how long streams may stay before they are ended (default 10 s).',
          }),
        ),
        maxBehindMs: Type.Optional(
          Type.Integer({
            minimum: 100,
            maximum: 86_400_000,
            description:
              'A client that stopped reading gets no new pushes (it catches up from the newest version once it ' +
              'reads again); after this long without reading it is ended with RESOURCE_EXHAUSTED (default 60 s).',
          }),
        ),
        warmingHoldMs: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: 60_000,
            description:
              'On ADS, listeners and routes that follow clusters added by the same change wait until the stream ' +
              "has sent those clusters' endpoints (Envoy asks for them once it applied the clusters), at most this " +
              'long (default 5 s; 0 turns the wait off).',
          }),
        ),
        overrideTtlMs: Type.Optional(
          Type.Integer({
            minimum: 3000,
            maximum: 3_600_000,
            description:
              'Overrides (Runtime documents and faults with until or for) are served with this xDS TTL and renewed ' +
              'every third of it: a proxy that stops hearing from fleetxds drops them after this long (default 30 s).',
          }),
        ),
        tls: Type.Optional(TlsFiles),
        threads: Type.Optional(
          Type.Union([Type.Integer({ minimum: 1, maximum: 256 }), Type.Literal('auto')], {
            description:
              'Threads serving xDS streams on the gRPC port (SO_REUSEPORT spreads connections over them); ' +
              "'auto': one per core. 1 (the default) serves in the main thread, beside the config pipeline.",
          }),
        ),
        implementation: Type.Optional(
          Type.Union([Type.Literal('node-http2'), Type.Literal('grpc-js')], {
            description:
              "The gRPC server under the xDS methods: fleetxds's own over node:http2 (default), or @grpc/grpc-js's, " +
              'kept to measure the two side by side (no certificate reload, one thread only).',
          }),
        ),
        serveLastAckedOnNack: Type.Optional(
          Type.Boolean({
            description:
              "NACK containment: a node connecting while its group's newest version of a type stands NACKed " +
              'first gets the last version the group ACKed.',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    admin: Type.Object({ listen: Listen, tokens: Type.Optional(TokenList) }, { additionalProperties: false }),
    rest: Type.Optional(RestSchema),
    files: Type.Optional(FilesSchema),
    watch: Type.Optional(WatchSchema),
    sds: Type.Optional(
      Type.Object(
        {
          insecureLoopbackOnly: Type.Optional(
            Type.Boolean({
              description:
                'Serve TLS secrets to clients the transport does not authenticate. Accepted only while every xDS ' +
                'port listens on loopback (a lab, the bundled example); never in production.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    envoyCheck: Type.Optional(
      Type.Object(
        {
          binaries: Type.Array(Type.String({ minLength: 1 }), {
            minItems: 1,
            description:
              "Envoy binaries (the releases the fleet runs) that must accept every group's resources before a " +
              'tree is applied.',
          }),
          timeoutMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 600000 })),
        },
        { additionalProperties: false },
      ),
    ),
    replica: Type.Optional(
      Type.Object(
        {
          name: Type.String({
            pattern: '^[A-Za-z0-9._-]{1,63}$',
            description: "This replica's name: on the nodes it serves and as the replica label of its metrics.",
          }),
          peers: Type.Optional(
            Type.Array(Type.String({ pattern: '^https?://[^\\s/]+/?$' }), {
              maxItems: 64,
              description: 'Admin API base URLs of the other replicas; their proxies show in this status too.',
            }),
          ),
          token: Type.Optional(Type.String({ minLength: 1, description: "A token the peers' admin APIs accept." })),
          postgres: Type.Optional(
            Type.Object(
              {
                url: Type.String({
                  pattern: '^postgres(ql)?://',
                  description:
                    'Where operator decisions (rollback, pins, rollout commands) are shared between replicas: a ' +
                    'PostgreSQL connection URL (FLEETXDS_POSTGRES_URL overrides it, to keep a password out of the ' +
                    'file).',
                }),
                pollMs: Type.Optional(
                  Type.Integer({
                    minimum: 100,
                    maximum: 60_000,
                    description:
                      'Backstop for a missed notification: how often to look for new decisions (default 1 s).',
                  }),
                ),
                queryTimeoutMs: Type.Optional(
                  Type.Integer({
                    minimum: 100,
                    maximum: 60_000,
                    description: 'A store that does not answer within this counts as unreachable (default 3 s).',
                  }),
                ),
                notReadyWhileUnknown: Type.Optional(
                  Type.Boolean({
                    description:
                      'Answer /readyz with 503 while this replica cannot know whether it missed decisions (the ' +
                      'store unreachable, or not read to its end since it was reached). Either way the replica ' +
                      'serves the decisions it applied last (default false: it stays ready).',
                  }),
                ),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    retention: Type.Optional(
      Type.Object(
        {
          nacks: Type.Optional(
            Type.Object(
              {
                ...LogRetentionFields,
                perNode: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'Default 20.' })),
                perVersion: Type.Optional(
                  Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Default 1,000.' }),
                ),
              },
              {
                additionalProperties: false,
                description: 'NACKs (default 10,000 rows, 30 days): one per node, type and version.',
              },
            ),
          ),
          rejections: Type.Optional(
            Type.Object(LogRetentionFields, {
              additionalProperties: false,
              description: 'Rejected trees (default 1,000 rows, 90 days).',
            }),
          ),
          audit: Type.Optional(
            Type.Object(LogRetentionFields, {
              additionalProperties: false,
              description: 'Operator decisions (default 100,000 rows, 400 days).',
            }),
          ),
        },
        { additionalProperties: false, description: 'How much of each log the database keeps.' },
      ),
    ),
    log: Type.Optional(
      Type.Object(
        {
          level: Type.Optional(
            Type.Union(
              ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
              { default: 'info' },
            ),
          ),
        },
        { additionalProperties: false, default: {} },
      ),
    ),
  },
  { additionalProperties: false },
);
