import pino from 'pino';
import { startApp } from '../app/app.ts';
import { sdNotify, startWatchdog } from '../app/sd-notify.ts';
import { ConfigError, loadServerConfig } from '../config/server-config.ts';

/** Runs until SIGINT/SIGTERM; SIGHUP re-reads the config directory and the listeners' certificate files. */
export async function serveCommand(configFile: string): Promise<number | undefined> {
  let config: ReturnType<typeof loadServerConfig>;
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
  process.on('SIGHUP', () => {
    if (!app) return;
    void sdNotify('RELOADING=1', 'STATUS=re-reading the config directory and listener certificates')
      .then(() => app!.reloadCertificates())
      .then(() => app!.reload())
      .then(() => sdNotify('READY=1', `STATUS=${app!.servingStatus()}`))
      .catch((err) => log.error({ err }, 'reload on SIGHUP failed'));
  });
  app = await startApp(config, log);
  // Ready once every listener is bound and the directory has been read once: serving the last good
  // version, or nothing yet with the reason in the status line (a unit that never became ready
  // would be restarted in a loop over a tree only a push can fix).
  await sdNotify('READY=1', `STATUS=${app.servingStatus()}`);
  const status = () => void sdNotify(`STATUS=${app.servingStatus()}`);
  app.pipeline.events.on('applied', status).on('rejected', status).on('unreadable', status);
  startWatchdog(() => true);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: answering held polls, closing streams and the database');
    await sdNotify('STOPPING=1');
    await app.close();
    process.exit(0);
  };
  // A shutdown that fails still ends the process, with the reason logged.
  const stopOn = (signal: string) =>
    void stop(signal).catch((err) => {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  process.once('SIGINT', () => stopOn('SIGINT'));
  process.once('SIGTERM', () => stopOn('SIGTERM'));
  return undefined;
}
