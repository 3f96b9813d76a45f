/**
 * fleetxds' own settings (config/fleetxds.yaml), validated at start with the same schema tooling
 * as the operator model. Relative paths resolve against the settings file's folder. A few
 * environment variables override the file for the usual deployment cases.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parse } from '../shared/yaml.ts';
import { FilesSchema, RestSchema, ServerConfigSchema, TlsFiles, WatchSchema } from './settings-schema.ts';

export { ServerConfigSchema } from './settings-schema.ts';

/** Fields whose default the schema gives: present once the settings are loaded. */
type Defaulted<T, K extends keyof T> = Omit<T, K> & Required<Pick<T, K>>;

export type TlsSettings = Static<typeof TlsFiles>;

export type RestSettings = Defaulted<
  Static<typeof RestSchema>,
  'holdMs' | 'refreshDelayMs' | 'requestTimeoutMs' | 'bodyLimit' | 'maxHeld' | 'maxCachedBytes'
>;

export type FilesSettings = Defaulted<Static<typeof FilesSchema>, 'enabled' | 'envoyDir' | 'format' | 'layout'>;

export type WatchSettings = Defaulted<Static<typeof WatchSchema>, 'enabled' | 'debounceMs' | 'maxWaitMs'>;

type Settings = Static<typeof ServerConfigSchema>;

export type ServerConfig = Omit<Settings, 'rest' | 'files' | 'watch' | 'log'> & {
  watch: WatchSettings;
  log: { level: string };
  rest?: RestSettings;
  files?: FilesSettings;
};

/**
 * The REST settings with the schema's defaults. The hold's default follows the request timeout:
 * Envoy's request_timeout must exceed the hold, or every held poll counts as a failure.
 */
export function restSettings(r: Static<typeof RestSchema>): RestSettings {
  const d = Value.Default(RestSchema, structuredClone(r)) as Static<typeof RestSchema> & Omit<RestSettings, 'holdMs'>;
  return { ...d, holdMs: d.holdMs ?? Math.max(0, d.requestTimeoutMs - 5_000) };
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
  // The schema's defaults, for what the file leaves out (watch, log, a listener's bounds).
  const cfg = Value.Default(ServerConfigSchema, raw0) as Settings & { watch: WatchSettings; log: { level: string } };
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
  if (
    cfg.grpc.implementation === 'grpc-js' &&
    ((cfg.grpc.threads !== undefined && cfg.grpc.threads !== 1) || cfg.grpc.tls)
  )
    throw new ConfigError(
      `${file}: grpc.implementation grpc-js serves in one thread without TLS (it cannot share a port between ` +
        'threads nor take a renewed certificate); drop grpc.threads and grpc.tls, or use node-http2',
    );
  const rest = cfg.rest ? restSettings(cfg.rest) : undefined;
  if (rest && rest.holdMs >= rest.requestTimeoutMs)
    throw new ConfigError(
      `${file}: rest.holdMs (${rest.holdMs}) must be below rest.requestTimeoutMs (${rest.requestTimeoutMs}), ` +
        `Envoy's request_timeout`,
    );
  // The proxies see the files where fleetxds writes them unless envoyDir says otherwise.
  const files: FilesSettings | undefined = cfg.files && {
    ...(cfg.files as Omit<FilesSettings, 'envoyDir'>),
    dir: resolve(base, cfg.files.dir),
    envoyDir: cfg.files.envoyDir ?? resolve(base, cfg.files.dir),
  };
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
