import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startApp, type RunningApp } from '../../src/app/app.ts';
import {
  restSettings,
  type FilesSettings,
  type RestSettings,
  type ServerConfig,
} from '../../src/config/server-config.ts';
import { tempDir } from './tree.ts';

/** Starts the real app in-process on ephemeral ports over `configDir`. */
export interface StartOptions {
  watch?: boolean;
  database?: string;
  rest?: Partial<RestSettings>;
  files?: Partial<FilesSettings> & { dir: string };
  serveLastAckedOnNack?: boolean;
  envoyCheck?: { binaries: string[] };
  maxUnreadBytes?: number;
  maxBehindMs?: number;
  grpc?: {
    maxStreams?: number;
    maxConnectionAgeMs?: number;
    maxConnectionAgeGraceMs?: number;
    warmingHoldMs?: number;
    overrideTtlMs?: number;
    threads?: number | 'auto';
    tls?: ServerConfig['grpc']['tls'];
  };
  replica?: ServerConfig['replica'];
  /** host:port for gRPC (default: a free port on 127.0.0.1). */
  grpcListen?: string;
  /** host:port for the admin API (default: a free port on 127.0.0.1). */
  adminListen?: string;
  /** Serve SDS without authentication (loopback only; default true here: most tests are about other things). */
  insecureSds?: boolean;
  /** Receives every log line (JSON) the server writes, at debug level. */
  logLines?: string[];
  retention?: ServerConfig['retention'];
}

function grpcImplementation(v: string | undefined): ServerConfig['grpc']['implementation'] {
  if (v === undefined || v === 'node-http2' || v === 'grpc-js') return v;
  throw new Error(`FLEETXDS_TEST_GRPC_IMPLEMENTATION: "${v}" is neither node-http2 nor grpc-js`);
}

export async function startServer(configDir: string, opts: StartOptions = {}): Promise<RunningApp> {
  const config: ServerConfig = {
    rest: opts.rest ? restSettings({ listen: '127.0.0.1:0', ...opts.rest }) : undefined,
    files: opts.files
      ? { enabled: true, envoyDir: opts.files.dir, format: 'json', layout: 'files', ...opts.files }
      : undefined,
    configDir,
    replica: opts.replica,
    database: opts.database ?? join(tempDir(), 'fleetxds.db'),
    grpc: {
      listen: opts.grpcListen ?? '127.0.0.1:0',
      serveLastAckedOnNack: opts.serveLastAckedOnNack,
      maxUnreadBytes: opts.maxUnreadBytes,
      maxBehindMs: opts.maxBehindMs,
      // The protocol suites can be run against serving threads: FLEETXDS_TEST_GRPC_THREADS=2.
      threads: Number(process.env.FLEETXDS_TEST_GRPC_THREADS) || undefined,
      // ... and over grpc-js's server: FLEETXDS_TEST_GRPC_IMPLEMENTATION=grpc-js.
      implementation: grpcImplementation(process.env.FLEETXDS_TEST_GRPC_IMPLEMENTATION),
      ...opts.grpc,
    },
    admin: { listen: opts.adminListen ?? '127.0.0.1:0' },
    watch: { enabled: opts.watch ?? false, debounceMs: 100, maxWaitMs: 1000 },
    log: { level: 'silent' },
    envoyCheck: opts.envoyCheck,
    sds: { insecureLoopbackOnly: opts.insecureSds ?? true },
    retention: opts.retention,
  };
  const log = opts.logLines
    ? pino({ level: 'debug' }, { write: (line: string) => void opts.logLines!.push(line) })
    : pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  return startApp(config, log);
}

/**
 * A settings file for the CLI's admin commands against a server started here (`startServer`): the
 * same tree and database, its admin port.
 */
export function cliSettings(configDir: string, database: string, app: RunningApp): string {
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${configDir}\ndatabase: ${database}\ngrpc: { listen: 127.0.0.1:0 }\n` +
      `admin: { listen: 127.0.0.1:${app.adminPort} }\n`,
  );
  return settings;
}
