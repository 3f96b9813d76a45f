import pino from 'pino';
import { startApp } from '../app/app.ts';
import { ConfigError, loadServerConfig } from '../config/server-config.ts';

/** Runs until SIGINT/SIGTERM; SIGHUP re-reads the config directory. */
export async function serveCommand(configFile: string): Promise<number | undefined> {
  let config;
  try {
    config = loadServerConfig(configFile);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`fleetxds: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const log = pino({ level: config.log.level });
  // Installed before serving: Node's default SIGHUP action would kill the process.
  let app: Awaited<ReturnType<typeof startApp>> | undefined;
  process.on('SIGHUP', () => void app?.reload());
  app = await startApp(config, log);
  const stop = async (signal: string) => {
    log.info({ signal }, 'shutting down');
    await app!.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  return undefined;
}
