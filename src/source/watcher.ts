import { watch, type FSWatcher } from 'chokidar';
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
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
 *
 * `dir` may be a symlink swapped atomically (`current -> releases/<sha>`, as the git post-receive
 * hook does). chokidar would keep watching the old target, so the link's parent folder is watched
 * too (not following links), and the content watch moves to the new target on a swap. A periodic
 * reconcile covers events inotify drops.
 */
export class TreeWatcher {
  private content?: FSWatcher;
  private parent?: FSWatcher;
  private target?: string;
  private reconcile?: NodeJS.Timeout;
  private readonly debouncer: Debouncer;

  constructor(private readonly opts: TreeWatcherOptions & { reconcileMs?: number }) {
    this.debouncer = new Debouncer(opts.onChange, opts.debounceMs, opts.maxWaitMs);
  }

  /** `force`: the folder was replaced under the same path (deleted and created again): a new watch. */
  private async watchContent(force = false): Promise<void> {
    let target: string;
    try {
      target = await realpath(this.opts.dir);
    } catch {
      return; // the directory is gone for now; the parent watch or the reconcile brings it back
    }
    if (!force && target === this.target && this.content) return;
    await this.content?.close();
    this.target = target;
    const w = watch(target, {
      ignoreInitial: true,
      ignored: (path: string) => path !== target && isIgnoredName(basename(path)),
      atomic: true,
    });
    w.on('all', () => this.debouncer.trigger());
    w.on('error', (err) => this.opts.onError(err as Error));
    await new Promise<void>((resolve) => w.once('ready', () => resolve()));
    this.content = w;
  }

  /** Every symlink on the way to `dir` (the dir itself, or an ancestor such as `current`). */
  private async symlinksOnPath(): Promise<string[]> {
    const out: string[] = [];
    let p = resolve(this.opts.dir);
    for (;;) {
      try {
        if ((await lstat(p)).isSymbolicLink()) out.push(p);
      } catch {
        /* not there (yet) */
      }
      const parent = dirname(p);
      if (parent === p) return out;
      p = parent;
    }
  }

  async start(): Promise<void> {
    await this.watchContent();
    // Watch the folder holding the config folder and each symlink on the path, without following
    // links: a swap of a link is a rename there, and so is the config folder being deleted and
    // created again (a watch on the deleted folder would see nothing more).
    const dir = resolve(this.opts.dir);
    const links = await this.symlinksOnPath();
    const watched = [dir, ...links];
    const p = watch([...new Set(watched.map((l) => dirname(l)))], {
      ignoreInitial: true,
      depth: 0,
      followSymlinks: false,
    });
    p.on('all', (_ev, path) => {
      if (!watched.includes(path)) return;
      void this.watchContent(path === dir).then(() => this.debouncer.trigger());
    });
    p.on('error', (err) => this.opts.onError(err as Error));
    await new Promise<void>((r) => p.once('ready', () => r()));
    this.parent = p;
    if (this.opts.reconcileMs) {
      this.reconcile = setInterval(
        () => void this.watchContent().then(() => this.opts.onChange()),
        this.opts.reconcileMs,
      );
      this.reconcile.unref();
    }
  }

  async close(): Promise<void> {
    this.debouncer.cancel();
    if (this.reconcile) clearInterval(this.reconcile);
    await this.content?.close();
    await this.parent?.close();
  }
}

/**
 * Watches the folders holding a set of certificate files (the served secrets', or fleetxds's own
 * listeners'; certbot and CA agents replace files or swap symlinks there), and asks for a reload
 * on any change in them.
 */
export class SecretWatcher {
  private watcher?: FSWatcher;
  private dirs = new Set<string>();
  private readonly debouncer: Debouncer;

  constructor(
    private readonly files: () => string[],
    onChange: () => void,
    debounceMs: number,
    private readonly onError: (err: Error) => void,
  ) {
    this.debouncer = new Debouncer(onChange, debounceMs, debounceMs * 5 + 1000);
  }

  /** Follows the set of folders to the secrets currently served. */
  async sync(): Promise<void> {
    const want = new Set(this.files().map((f) => dirname(f)));
    const add = [...want].filter((d) => !this.dirs.has(d));
    const remove = [...this.dirs].filter((d) => !want.has(d));
    if (!add.length && !remove.length) return;
    if (!this.watcher) {
      this.watcher = watch([], { ignoreInitial: true, depth: 0, atomic: true });
      this.watcher.on('all', () => this.debouncer.trigger());
      this.watcher.on('error', (err) => this.onError(err as Error));
    }
    if (remove.length) this.watcher.unwatch(remove);
    if (add.length) {
      this.watcher.add(add);
      await new Promise<void>((r) => setTimeout(r, 50)); // let chokidar arm the new watches
    }
    this.dirs = want;
  }

  async close(): Promise<void> {
    this.debouncer.cancel();
    await this.watcher?.close();
  }
}
