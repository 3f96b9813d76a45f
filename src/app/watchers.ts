import type { Logger } from 'pino';
import type { ServerConfig } from '../config/server-config.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import { SecretWatcher, TreeWatcher } from '../source/watcher.ts';
import type { ConfigPipeline } from './pipeline.ts';
import type { Teardown } from './teardown.ts';

type WatchSettings = ServerConfig['watch'];

/**
 * Reads the tree, and again on each change while watching. The watch is armed while the tree is
 * first read, and the tree is read once more when it is: a file written between the read and the
 * watch would otherwise wait for the periodic reconcile.
 */
export async function readAndWatchTree(
  configDir: string,
  watch: WatchSettings,
  reload: () => Promise<unknown>,
  log: Logger,
  teardown: Teardown,
): Promise<void> {
  const watcher =
    watch.enabled &&
    new TreeWatcher({
      dir: configDir,
      debounceMs: watch.debounceMs,
      maxWaitMs: watch.maxWaitMs,
      reconcileMs: watch.reconcileMs,
      onChange: () => void reload(),
      onError: (err) => log.error({ err }, 'watcher error'),
    });
  if (watcher) teardown.defer('the tree watcher', () => watcher.close());
  const watching = watcher && watcher.start();
  await reload();
  if (watching) {
    await watching;
    await reload(); // an unchanged tree is only stat'ed
  }
}

/** Certificate rotation: the folders of the served secrets' files are watched, and read again on a change. */
export async function watchSecretFiles(
  watch: WatchSettings,
  pipeline: ConfigPipeline,
  cache: SnapshotCache,
  log: Logger,
  teardown: Teardown,
): Promise<void> {
  if (!watch.enabled) return;
  const watcher = new SecretWatcher(
    () => pipeline.served.secretFiles,
    () => void pipeline.reloadSecrets().catch((err) => log.error({ err }, 'secret reload failed')),
    watch.debounceMs,
    (err) => log.error({ err }, 'secret watcher error'),
  );
  teardown.defer('the secret files watcher', () => watcher.close());
  await watcher.sync();
  cache.onPublish(() => void watcher.sync().catch((err) => log.error({ err }, 'secret watcher sync failed')));
}

/** fleetxds's own listener certificates (gRPC, REST), served anew when their files change. */
export async function watchListenerCertificates(
  watch: WatchSettings,
  paths: readonly string[],
  reload: () => Promise<void>,
  log: Logger,
  teardown: Teardown,
): Promise<void> {
  if (!watch.enabled || paths.length === 0) return;
  const watcher = new SecretWatcher(
    () => [...paths],
    () => void reload().catch((err) => log.error({ err }, 'listener certificate reload failed')),
    watch.debounceMs,
    (err) => log.error({ err }, 'listener certificate watcher error'),
  );
  teardown.defer('the listener certificate watcher', () => watcher.close());
  await watcher.sync();
}
