import type { Logger } from 'pino';
import type { FilesSettings } from '../config/server-config.ts';
import type { SnapshotCache } from '../snapshot/snapshot-cache.ts';
import type { FileRenderer, RenderStats } from '../transports/files/file-renderer.ts';
import type { Teardown } from './teardown.ts';

export interface FileRendering {
  files?: FileRenderer;
  /** Resolves when the files of the latest published version are on disk. */
  idle(): Promise<RenderStats | undefined>;
}

/** Files rendered after each publish, one render at a time (a newer version supersedes). */
export async function renderFiles(
  settings: FilesSettings | undefined,
  cache: SnapshotCache,
  log: Logger,
  teardown: Teardown,
): Promise<FileRendering> {
  let rendering: Promise<RenderStats | undefined> = Promise.resolve(undefined);
  const idle = () => rendering;
  if (!settings?.enabled) return { idle };
  const { FileRenderer } = await import('../transports/files/file-renderer.ts');
  const files = new FileRenderer({
    dir: settings.dir,
    envoyDir: settings.envoyDir,
    format: settings.format,
    layout: settings.layout,
    log: log.child({ component: 'files' }),
  });
  const render = () => {
    rendering = rendering
      .then(() => (cache.current ? files.render(cache.current) : undefined))
      .catch((err) => {
        log.error({ err }, 'rendering files failed');
        return undefined;
      });
  };
  cache.onPublish(render);
  teardown.defer('rendering files', () => rendering);
  if (cache.current) render();
  return { files, idle };
}
