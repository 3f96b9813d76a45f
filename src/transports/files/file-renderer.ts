/**
 * Renders DiscoveryResponse files for Envoy's path-based (filesystem) subscriptions, per node group:
 *   <dir>/<group>/cds.json, lds.json, eds/<cluster>.json, rds/<route>.json, ecds/<extension>.json,
 *   sds/<secret>.json, rtds/<layer>.json
 * CDS/LDS files hold the full state; EDS/RDS/SDS files exactly one resource (Envoy does no name
 * filtering on files). Every write is temp + fsync + rename (Envoy reloads only on a move) and
 * only files whose content changed are rewritten.
 *
 * Order (make before break): secrets; endpoint files of new clusters (Envoy requires a path to
 * exist when a subscription is created); clusters; endpoint files of existing clusters; route and
 * extension config files new listeners name; listeners; those of existing ones; removals last.
 *
 * `watched_directory` layout instead renders each version into <group>/.v-<hash>/ and swaps the
 * <group>/current symlink with one rename, so Envoy sees all files of a version change at once.
 */
import { OVERRIDE_LAYER, RUNTIME_LAYER } from '../../translate/runtime.ts';
import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, readFile, readdir, readlink, rename, rm, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify as toYaml } from '../../shared/yaml.ts';
import type { Logger } from 'pino';
import { fsyncDir, isAtomicWriteTemp, writeFileAtomic } from '../../shared/atomic-write.ts';
import { retargetConfigSources, type ConfigSourceFor } from '../../snapshot/config-sources.ts';
import type { GroupSnapshot } from '../../snapshot/group-snapshot.ts';
import type { PublishedConfig } from '../../snapshot/snapshot-cache.ts';
import { TypeUrls, type ResourceKind } from '../../xds/resource-types.ts';
import { groupDirName, inside, resourceFileName } from './paths.ts';

export interface FileRendererOptions {
  /** Where files are written. */
  dir: string;
  /** The same directory as Envoy sees it (paths inside resources); defaults to `dir`. */
  envoyDir?: string;
  format: 'json' | 'yaml';
  layout: 'files' | 'watched_directory';
  log?: Logger;
}

export interface RenderStats {
  written: number;
  unchanged: number;
  removed: number;
  bytesWritten: number;
}

interface PlannedFile {
  rel: string;
  content: string;
  mode: number;
  phase: number;
}

const KIND_FILES: Record<ResourceKind, { single?: string; folder?: string }> = {
  cluster: { single: 'cds' },
  listener: { single: 'lds' },
  endpoint: { folder: 'eds' },
  route: { folder: 'rds' },
  extension: { folder: 'ecds' },
  secret: { folder: 'sds' },
  runtime: { folder: 'rtds' },
};

const FOLDERS = Object.values(KIND_FILES).flatMap((f) => (f.folder ? [f.folder] : []));

export class FileRenderer {
  /** Content hash of what we last wrote, per absolute path (avoids re-reading unchanged files). */
  private readonly written = new Map<string, string>();

  constructor(private readonly opts: FileRendererOptions) {}

  private get ext(): string {
    return this.opts.format === 'yaml' ? 'yaml' : 'json';
  }

  /** Path of a group's file for (kind, name) as Envoy sees it. */
  envoyPath(group: string, kind: ResourceKind, name?: string): string {
    const base = join(
      this.opts.envoyDir ?? this.opts.dir,
      groupDirName(group),
      this.opts.layout === 'watched_directory' ? 'current' : '',
    );
    return join(base, this.relPath(kind, name));
  }

  /** The files a group's bootstrap names, as Envoy sees them (its clusters, listeners, runtime layers). */
  bootstrapFiles(group: string): {
    cds: string;
    lds: string;
    rtds: { base: string; overrides: string };
    watchedDirectory?: string;
  } {
    return {
      cds: this.envoyPath(group, 'cluster'),
      lds: this.envoyPath(group, 'listener'),
      rtds: {
        base: this.envoyPath(group, 'runtime', RUNTIME_LAYER),
        overrides: this.envoyPath(group, 'runtime', OVERRIDE_LAYER),
      },
      watchedDirectory: this.opts.layout === 'watched_directory' ? this.envoyGroupDir(group) : undefined,
    };
  }

  envoyGroupDir(group: string): string {
    return join(this.opts.envoyDir ?? this.opts.dir, groupDirName(group));
  }

  private relPath(kind: ResourceKind, name?: string): string {
    const f = KIND_FILES[kind];
    return f.single ? `${f.single}.${this.ext}` : join(f.folder!, `${resourceFileName(name!)}.${this.ext}`);
  }

  /** The config source a file-subscribed Envoy uses for (kind, name) in `group`. */
  configSource(group: string): ConfigSourceFor {
    return (kind, name) => ({
      path_config_source: {
        path: this.envoyPath(group, kind, name),
        ...(this.opts.layout === 'watched_directory' ? { watched_directory: { path: this.envoyGroupDir(group) } } : {}),
      },
      resource_api_version: 'V3',
    });
  }

  private serialize(doc: object): string {
    return this.opts.format === 'yaml' ? toYaml(doc) : `${JSON.stringify(doc, null, 2)}\n`;
  }

  private plan(group: string, snap: GroupSnapshot, previous: Set<string>): PlannedFile[] {
    const files: PlannedFile[] = [];
    const sourceFor = this.configSource(group);
    const doc = (kind: ResourceKind, version: string, resources: Record<string, unknown>[]) =>
      this.serialize({
        version_info: version,
        type_url: TypeUrls[kind],
        resources: resources.map((r) => ({ '@type': TypeUrls[kind], ...retargetConfigSources(r, sourceFor) })),
      });
    for (const kind of ['cluster', 'listener'] as const) {
      const t = snap.types[kind];
      files.push({
        rel: this.relPath(kind),
        content: doc(
          kind,
          t.version,
          t.wildcard.map((r) => r.json),
        ),
        mode: 0o640,
        phase: kind === 'cluster' ? 2 : 5,
      });
    }
    // Runtime layers, one file each (a layer reads one resource), whenever: nothing references
    // them, nothing waits for them.
    const phases: Record<'endpoint' | 'route' | 'extension' | 'secret' | 'runtime', [number, number]> = {
      secret: [0, 0],
      runtime: [0, 0],
      endpoint: [1, 3],
      route: [4, 6],
      extension: [4, 6],
    };
    for (const kind of ['secret', 'runtime', 'endpoint', 'route', 'extension'] as const) {
      for (const r of snap.types[kind].resources.values()) {
        const rel = this.relPath(kind, r.name);
        const [isNew, existing] = phases[kind];
        files.push({
          rel,
          content: doc(kind, r.version, [r.json]),
          mode: kind === 'secret' ? 0o600 : 0o640,
          phase: previous.has(rel) ? existing : isNew,
        });
      }
    }
    return files.sort((a, b) => a.phase - b.phase || (a.rel < b.rel ? -1 : 1));
  }

  /** Groups whose last render failed (their proxies keep the files of an earlier version). */
  readonly failures = new Map<string, { error: string; versionId: number; at: string }>();

  async render(cfg: PublishedConfig): Promise<RenderStats> {
    const stats: RenderStats = { written: 0, unchanged: 0, removed: 0, bytesWritten: 0 };
    await mkdir(this.opts.dir, { recursive: true });
    if (!this.cleaned) await this.removeLeftovers();
    for (const [group, snap] of cfg.groups) {
      // One group's failure (a full disk, a bad folder) must not keep the others stale.
      try {
        if (this.opts.layout === 'watched_directory') await this.renderSwapped(group, snap, stats);
        else await this.renderInPlace(group, snap, stats);
        this.failures.delete(group);
      } catch (err) {
        this.failures.set(group, {
          error: (err as Error).message,
          versionId: cfg.versionId,
          at: new Date().toISOString(),
        });
        this.opts.log?.error(
          { group, err },
          'rendering files for a node group failed; its proxies keep the previous files',
        );
      }
    }
    for (const g of this.failures.keys()) if (!cfg.groups.has(g)) this.failures.delete(g);
    this.opts.log?.debug({ ...stats }, 'rendered files');
    return stats;
  }

  private cleaned = false;

  /** Temporary files of writes a crash interrupted (`.<name>.<pid>.<random>.tmp`, never read by Envoy). */
  private async removeLeftovers(): Promise<void> {
    this.cleaned = true;
    const walk = async (dir: string): Promise<void> => {
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const p = join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && isAtomicWriteTemp(e.name)) await unlink(p).catch(() => {});
        else if (e.isSymbolicLink() && /^\.current\.\d+\.tmp$/.test(e.name)) await unlink(p).catch(() => {});
      }
    };
    await walk(this.opts.dir);
  }

  private async renderInPlace(group: string, snap: GroupSnapshot, stats: RenderStats): Promise<void> {
    const gdir = inside(this.opts.dir, groupDirName(group));
    const previous = new Set(await listFiles(gdir));
    const files = this.plan(group, snap, previous);
    for (const sub of FOLDERS) await mkdir(join(gdir, sub), { recursive: true, mode: sub === 'sds' ? 0o700 : 0o750 });
    for (const f of files) await this.writeIfChanged(inside(gdir, f.rel), f.content, f.mode, stats);
    const keep = new Set(files.map((f) => f.rel));
    for (const rel of previous) {
      if (keep.has(rel) || !/\.(json|yaml)$/.test(rel)) continue;
      await unlink(inside(gdir, rel)).catch(() => {});
      this.written.delete(inside(gdir, rel));
      stats.removed++;
    }
  }

  private async writeIfChanged(path: string, content: string, mode: number, stats: RenderStats): Promise<void> {
    const hash = createHash('sha256').update(content).digest('hex');
    let known = this.written.get(path);
    if (known === undefined) {
      const existing = await readFile(path, 'utf8').catch(() => undefined);
      if (existing !== undefined) known = createHash('sha256').update(existing).digest('hex');
    }
    if (known === hash) {
      this.written.set(path, hash);
      stats.unchanged++;
      return;
    }
    await writeFileAtomic(path, content, mode);
    this.written.set(path, hash);
    stats.written++;
    stats.bytesWritten += Buffer.byteLength(content);
  }

  private async renderSwapped(group: string, snap: GroupSnapshot, stats: RenderStats): Promise<void> {
    const gdir = inside(this.opts.dir, groupDirName(group));
    await mkdir(gdir, { recursive: true });
    const files = this.plan(group, snap, new Set());
    const versionHash = createHash('sha256');
    for (const f of files) versionHash.update(f.rel).update('\0').update(f.content).update('\0');
    const vname = `.v-${versionHash.digest('hex').slice(0, 16)}`;
    const current = join(gdir, 'current');
    const target = await readlinkSafe(current);
    if (target === vname) {
      stats.unchanged += files.length;
      return;
    }
    const vdir = inside(gdir, vname);
    await rm(vdir, { recursive: true, force: true });
    for (const sub of FOLDERS) await mkdir(join(vdir, sub), { recursive: true, mode: sub === 'sds' ? 0o700 : 0o750 });
    for (const f of files) {
      await writeFileAtomic(inside(vdir, f.rel), f.content, f.mode);
      stats.written++;
      stats.bytesWritten += Buffer.byteLength(f.content);
    }
    const tmpLink = join(gdir, `.current.${process.pid}.tmp`);
    await unlink(tmpLink).catch(() => {});
    await symlink(vname, tmpLink);
    await rename(tmpLink, current); // one atomic switch of the whole set
    await fsyncDir(gdir);
    // Keep the two previous versions for proxies still reading them.
    const versions = (await readdir(gdir)).filter((n) => n.startsWith('.v-') && n !== vname);
    const keep = new Set([target]);
    for (const old of versions) {
      if (keep.has(old)) continue;
      await rm(inside(gdir, old), { recursive: true, force: true });
      stats.removed++;
    }
  }
}

async function readlinkSafe(p: string): Promise<string | undefined> {
  try {
    return await readlink(p);
  } catch {
    return undefined;
  }
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  let entries: Dirent[];
  try {
    entries = await readdir(join(dir, prefix), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else if (e.isFile()) out.push(rel);
  }
  return out;
}
