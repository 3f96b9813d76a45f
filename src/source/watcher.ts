import { watch, type FSWatcher } from 'chokidar';
import { basename } from 'node:path';
import { Debouncer } from './debounce.ts';
import { isIgnoredName } from './read-tree.ts';

export interface TreeWatcherOptions {
  dir: string;
  debounceMs: number;
  maxWaitMs: number;
  /** Called once per burst of changes; the tree is re-read as a whole. */
  onChange: () => void;
  onError: (err: Error) => void;
}

/**
 * Watches the config tree and reports bursts, never single files: each burst makes the pipeline
 * re-read and re-validate the whole tree (per-file applies would see half-checked-out trees).
 * Editors' temp files and dot-folders (.git) are ignored; renames and deletes are events too.
 */
export class TreeWatcher {
  private watcher?: FSWatcher;
  private readonly debouncer: Debouncer;

  constructor(private readonly opts: TreeWatcherOptions) {
    this.debouncer = new Debouncer(opts.onChange, opts.debounceMs, opts.maxWaitMs);
  }

  async start(): Promise<void> {
    const w = watch(this.opts.dir, {
      ignoreInitial: true,
      ignored: (path: string) => path !== this.opts.dir && isIgnoredName(basename(path)),
      atomic: true,
    });
    w.on('all', () => this.debouncer.trigger());
    w.on('error', (err) => this.opts.onError(err as Error));
    await new Promise<void>((resolve) => w.once('ready', () => resolve()));
    this.watcher = w;
  }

  async close(): Promise<void> {
    this.debouncer.cancel();
    await this.watcher?.close();
  }
}
