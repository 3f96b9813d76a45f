/**
 * fleetxds' own settings (config/fleetxds.yaml), validated at start with the same schema tooling
 * as the operator model. Relative paths resolve against the settings file's folder. A few
 * environment variables override the file for the usual deployment cases.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { TlsProtocolSettings } from '../security/listener-tls.ts';
import { parse } from '../shared/yaml.ts';

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

const TlsFiles = Type.Object(
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
        tls: Type.Optional(TlsFiles),
        threads: Type.Optional(
          Type.Union([Type.Integer({ minimum: 1, maximum: 256 }), Type.Literal('auto')], {
            description:
              'Threads serving xDS streams on the gRPC port (SO_REUSEPORT spreads connections over them); ' +
              "'auto': one per core. 1 (the default) serves in the main thread, beside the config pipeline.",
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
    rest: Type.Optional(
      Type.Object(
        {
          listen: Listen,
          holdMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 600000,
              description: "How long an unchanged poll is held; keep it below Envoy's request_timeout.",
            }),
          ),
          refreshDelayMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 600000 })),
          requestTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 600000 })),
          bodyLimit: Type.Optional(Type.Integer({ minimum: 1024, maximum: 67108864 })),
          maxHeld: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000000 })),
          maxCachedBytes: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 17179869184,
              description:
                'Response bodies kept per type and version for reuse by other polls, in bytes (default 64 MiB). ' +
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
      ),
    ),
    files: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          dir: Type.String({ minLength: 1 }),
          envoyDir: Type.Optional(
            Type.String({ minLength: 1, description: 'The directory as the proxies see it, if different.' }),
          ),
          format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('yaml')])),
          layout: Type.Optional(Type.Union([Type.Literal('files'), Type.Literal('watched_directory')])),
        },
        { additionalProperties: false },
      ),
    ),
    watch: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          debounceMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60000 })),
          maxWaitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600000 })),
          reconcileMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 86400000,
              description: 'Full re-read this often, in case inotify dropped events (0 = never).',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
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
            Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export interface TlsSettings extends TlsProtocolSettings {
  certFile: string;
  keyFile: string;
  clientCaFile?: string;
  identityPrefix?: string;
}

export interface RestSettings {
  listen: string;
  tokens?: { name: string; sha256: string; role: 'read' | 'admin' }[];
  tls?: TlsSettings;
  holdMs: number;
  refreshDelayMs: number;
  requestTimeoutMs: number;
  bodyLimit: number;
  maxHeld: number;
  maxCachedBytes: number;
  pollerExpiryMs?: number;
}

export interface FilesSettings {
  enabled: boolean;
  dir: string;
  envoyDir: string;
  format: 'json' | 'yaml';
  layout: 'files' | 'watched_directory';
}

export type ServerConfig = Omit<Static<typeof ServerConfigSchema>, 'rest' | 'files' | 'watch' | 'log'> & {
  watch: { enabled: boolean; debounceMs: number; maxWaitMs: number; reconcileMs?: number };
  log: { level: string };
  rest?: RestSettings;
  files?: FilesSettings;
};

/** Envoy's REST request_timeout must exceed the hold, or every held poll counts as a failure. */
export function restSettings(r: Partial<RestSettings> & { listen: string }): RestSettings {
  const requestTimeoutMs = r.requestTimeoutMs ?? 30_000;
  return {
    listen: r.listen,
    requestTimeoutMs,
    holdMs: r.holdMs ?? Math.max(0, requestTimeoutMs - 5_000),
    refreshDelayMs: r.refreshDelayMs ?? 1_000,
    bodyLimit: r.bodyLimit ?? 1024 * 1024,
    maxHeld: r.maxHeld ?? 100_000,
    maxCachedBytes: r.maxCachedBytes ?? 64 << 20,
    pollerExpiryMs: r.pollerExpiryMs,
    tokens: r.tokens,
    tls: r.tls,
  };
}

export const ENV_OVERRIDES = {
  FLEETXDS_CONFIG_DIR: 'configDir',
  FLEETXDS_DATABASE: 'database',
  FLEETXDS_GRPC_LISTEN: 'grpc.listen',
  FLEETXDS_ADMIN_LISTEN: 'admin.listen',
  FLEETXDS_REST_LISTEN: 'rest.listen',
  FLEETXDS_FILES_DIR: 'files.dir',
  FLEETXDS_LOG_LEVEL: 'log.level',
  FLEETXDS_POSTGRES_URL: 'replica.postgres.url',
} as const;

export class ConfigError extends Error {}

export function loadServerConfig(file: string, env: NodeJS.ProcessEnv = process.env): ServerConfig {
  let raw: unknown;
  try {
    raw = parse(readFileSync(file, 'utf8'), { uniqueKeys: true, maxAliasCount: 0 });
  } catch (err) {
    throw new ConfigError(`${file}: ${(err as Error).message}`);
  }
  // Raw YAML, walked by dotted path before schema validation.
  const raw0: Record<string, unknown> = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  for (const [envName, path] of Object.entries(ENV_OVERRIDES)) {
    const v = env[envName];
    if (v === undefined || v === '') continue;
    const parts = path.split('.');
    let o = raw0;
    for (const p of parts.slice(0, -1)) {
      const next = o[p];
      o = (o[p] = next !== null && typeof next === 'object' ? next : {}) as Record<string, unknown>;
    }
    o[parts.at(-1) ?? envName] = v;
  }
  if (!Value.Check(ServerConfigSchema, raw0)) {
    const errors = [...Value.Errors(ServerConfigSchema, raw0)];
    throw new ConfigError(
      `${file}: invalid settings:\n` +
        errors.map((e) => `  ${e.path.slice(1).replace(/\//g, '.') || '(root)'}: ${e.message}`).join('\n'),
    );
  }
  const cfg: Static<typeof ServerConfigSchema> = raw0;
  const base = dirname(resolve(file));
  const tlsPaths = (t: TlsSettings | undefined): TlsSettings | undefined =>
    t && {
      ...t,
      certFile: resolve(base, t.certFile),
      keyFile: resolve(base, t.keyFile),
      clientCaFile: t.clientCaFile && resolve(base, t.clientCaFile),
    };
  if (cfg.grpc?.tls) cfg.grpc.tls = tlsPaths(cfg.grpc.tls);
  if (cfg.rest?.tls) cfg.rest.tls = tlsPaths(cfg.rest.tls);
  for (const t of [cfg.grpc?.tls, cfg.rest?.tls])
    if (t?.identityPrefix && !t.clientCaFile)
      throw new ConfigError(`${file}: tls.identityPrefix needs tls.clientCaFile (client certificates)`);
  const rest = cfg.rest ? restSettings(cfg.rest) : undefined;
  if (rest && rest.holdMs >= rest.requestTimeoutMs)
    throw new ConfigError(
      `${file}: rest.holdMs (${rest.holdMs}) must be below rest.requestTimeoutMs (${rest.requestTimeoutMs}), ` +
        `Envoy's request_timeout`,
    );
  const files: FilesSettings | undefined = cfg.files
    ? {
        enabled: cfg.files.enabled ?? true,
        dir: resolve(base, cfg.files.dir),
        envoyDir: cfg.files.envoyDir ?? resolve(base, cfg.files.dir),
        format: cfg.files.format ?? 'json',
        layout: cfg.files.layout ?? 'files',
      }
    : undefined;
  if (cfg.sds?.insecureLoopbackOnly) {
    const open = [cfg.grpc.listen, cfg.rest?.listen].filter(
      (l): l is string => typeof l === 'string' && !isLoopback(splitListen(l).host),
    );
    if (open.length)
      throw new ConfigError(
        `${file}: sds.insecureLoopbackOnly serves private keys without authentication and is refused while xDS ` +
          `listens beyond loopback (${open.join(', ')}); use grpc.tls / rest.tls with identityPrefix, or ` +
          `rest.tokens`,
      );
  }
  if (cfg.envoyCheck) cfg.envoyCheck.binaries = cfg.envoyCheck.binaries.map((b) => resolve(base, b));
  return {
    ...cfg,
    rest,
    files,
    configDir: resolve(base, cfg.configDir),
    database: cfg.database === ':memory:' ? ':memory:' : resolve(base, cfg.database),
    watch: {
      enabled: cfg.watch?.enabled ?? true,
      debounceMs: cfg.watch?.debounceMs ?? 200,
      maxWaitMs: cfg.watch?.maxWaitMs ?? 2000,
      reconcileMs: cfg.watch?.reconcileMs ?? 60_000,
    },
    log: { level: cfg.log?.level ?? 'info' },
  };
}

export function splitListen(listen: string): { host: string; port: number } {
  const i = listen.lastIndexOf(':');
  return { host: listen.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(listen.slice(i + 1)) };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Whether each transport may serve TLS secrets (private keys): only to nodes it authenticates
 * (gRPC: client certificates bound to node ids; REST: that, or bearer tokens), or on a
 * loopback-only server whose operator waived it.
 */
export function secretsAllowed(config: ServerConfig): { grpc: boolean; rest: boolean } {
  const waived = config.sds?.insecureLoopbackOnly === true;
  return {
    grpc: waived || Boolean(config.grpc.tls?.identityPrefix),
    rest: waived || Boolean(config.rest?.tls?.identityPrefix) || (config.rest?.tokens?.length ?? 0) > 0,
  };
}
