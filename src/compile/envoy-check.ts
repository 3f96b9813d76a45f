/**
 * Envoy as the final judge (optional): before a tree is applied, every node group's resources are
 * rendered as one static bootstrap (EDS clusters with their endpoints inline, listeners with their
 * route configuration inline, secrets as static secrets) and checked by the real Envoy binary with
 * `envoy --mode validate`, which builds every cluster, listener, route table and TLS context the
 * way a proxy would, without binding ports. Whatever Envoy rejects blocks the tree like any
 * validation error, reported against the YAML document that produced the resource: on a failure
 * the group is checked again piece by piece (clusters alone, each cluster, each listener, each
 * virtual host) to find it.
 *
 * Groups whose resources are unchanged since they last passed are not checked again. The
 * rendering holds private keys: it is written 0600 into a 0700 temporary folder, removed at once.
 * Paths inside resources (an upstream CA file) are checked on this host, which is the proxies'
 * file system only when they share it.
 */
import { execFile, spawn } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Codes, sortDiagnostics, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import { DiagnosticSink } from '../model/diagnostic-sink.ts';
import { isProxylessGroup, originIn, type Model } from '../model/types.ts';
import type { BuiltConfig, ResourceOrigin } from '../snapshot/build.ts';
import { rewriteAdsReferences } from '../snapshot/config-sources.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';

export interface EnvoyCheckSettings {
  /** Envoy binaries to check with (every release the fleet runs). */
  binaries: string[];
  timeoutMs?: number;
  /**
   * Where the renderings (which hold private keys) are written, one 0600 file per run. The server
   * gives a folder of its own and empties it at start (a run cut short by a kill leaves one behind);
   * by default the system's temporary folder.
   */
  workDir?: string;
}

/**
 * The server's folder for renderings: under the temporary folder (systemd's PrivateTmp covers it),
 * one per database file, so one server's start never empties another's. None for an in-memory one.
 */
export function envoyCheckDir(database: string): string | undefined {
  if (database === ':memory:') return undefined;
  return join(tmpdir(), `fleetxds-envoy-check-${sha256Hex(resolve(database)).slice(0, 16)}`);
}

/**
 * A folder of this command run's own for renderings, for `validate --envoy`: under a per-user 0700
 * folder in the temporary folder (refused when someone else owns it), named by process id; what
 * runs that are no longer alive left there (killed mid-check) is removed first. The caller removes
 * the folder when it ends, and on SIGINT, SIGTERM and SIGHUP.
 */
export async function commandRunDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const uid = process.getuid?.() ?? 0;
  const base = join(tmpdir(), `fleetxds-validate-${uid}`);
  await mkdir(base, { recursive: true, mode: 0o700 });
  const st = await lstat(base);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0)
    throw new Error(`${base} is not a folder of this user's alone (0700): refusing to write private keys there`);
  for (const name of await readdir(base)) {
    const pid = Number(/^run-(\d+)$/.exec(name)?.[1]);
    if (pid && !alive(pid)) await rm(join(base, name), { recursive: true, force: true });
  }
  const dir = join(base, `run-${process.pid}`);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// Envoy resource JSON walked structurally (listeners, filter chains): shapes are Envoy's, not ours.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- proto3 JSON of arbitrary Envoy messages
type Obj = Record<string, any>;

interface Piece {
  /** What is blamed if this piece alone fails. */
  blame?: { origin: ResourceOrigin; vhost?: number };
  /** The resource this piece checks (a virtual host's piece names its listener). */
  parent: string;
  /** A virtual host of the parent listener: blamed only when the listener alone passes. */
  part?: boolean;
  bootstrap: Obj;
}

/** What a group's resources reference, by name. */
interface Referenced {
  endpoints: ReadonlyMap<string, Obj>;
  routes: ReadonlyMap<string, Obj>;
  extensions: ReadonlyMap<string, Obj>;
}

/**
 * Replaces ADS references by the referenced resource inline (endpoints, routes, filter configs) or
 * a static secret name.
 */
function inline(json: Obj, { endpoints, routes, extensions }: Referenced, vhost?: number): Obj {
  return rewriteAdsReferences(json, {
    eds: ({ eds_cluster_config: _, ...cluster }, name) => ({
      ...cluster,
      type: 'STATIC',
      load_assignment: endpoints.get(name) ?? { cluster_name: name },
    }),
    rds: ({ rds: _, ...hcm }, name) => {
      const rc = routes.get(name) ?? { name };
      return {
        ...hcm,
        route_config: vhost === undefined ? rc : { ...rc, virtual_hosts: [(rc.virtual_hosts as Obj[])[vhost]] },
      };
    },
    sds: ({ sds_config: _, ...config }) => config, // a name alone refers to a static secret
    ecds: ({ config_discovery: _, ...filter }, name) => ({
      ...filter,
      typed_config: extensions.get(name)?.typed_config,
    }),
  });
}

interface GroupPieces {
  whole: Obj;
  clustersOnly: Obj;
  /** Each cluster alone. */
  clusters(): Piece[];
  /** Each listener alone and each of its virtual hosts; clusters in `bad` replaced by empty stand-ins. */
  listeners(bad: ReadonlySet<string>): Piece[];
}

function piecesOf(g: GroupSnapshot, origins: ReadonlyMap<string, ResourceOrigin>): GroupPieces {
  const endpoints = new Map([...g.types.endpoint.resources.values()].map((r) => [r.name, r.json as Obj]));
  const routes = new Map([...g.types.route.resources.values()].map((r) => [r.name, r.json as Obj]));
  const extensions = new Map([...g.types.extension.resources.values()].map((r) => [r.name, r.json as Obj]));
  const refs: Referenced = { endpoints, routes, extensions };
  const secrets = [...g.types.secret.resources.values()].map((r) => r.json);
  const clusters = [...g.types.cluster.resources.values()].map((r) => ({
    name: r.name,
    json: inline(r.json, refs),
  }));
  const listeners = g.types.listener.wildcard; // API listeners are for gRPC clients, not Envoy
  const boot = (c: Obj[], l: Obj[]): Obj => ({ static_resources: { clusters: c, listeners: l, secrets } });
  const allClusters = clusters.map((c) => c.json);
  const origin = (kind: string, name: string) => origins.get(`${kind}/${name}`);
  const blame = (kind: string, name: string, vhost?: number) => {
    const o = origin(kind, name);
    return o && { origin: o, vhost };
  };
  return {
    whole: boot(
      allClusters,
      listeners.map((r) => inline(r.json, refs)),
    ),
    clustersOnly: boot(allClusters, []),
    clusters: () =>
      clusters.map((c) => ({
        parent: `cluster/${c.name}`,
        blame: blame('cluster', c.name),
        bootstrap: boot([c.json], []),
      })),
    listeners: (bad) => {
      const usable = clusters.map((c) =>
        bad.has(c.name) ? { name: c.name, type: 'STATIC', load_assignment: { cluster_name: c.name } } : c.json,
      );
      return listeners.flatMap((r) => {
        const parent = `listener/${r.name}`;
        // The HTTP chains' routes (a TCP or passthrough chain has none; every HTTP chain names the same).
        const chains = ((r.json as Obj).filter_chains ?? []) as Obj[];
        const rds = chains
          .map((c) => {
            const hcm = (c.filters as Obj[] | undefined)?.[0]?.typed_config as Obj | undefined;
            return (hcm?.rds as Obj | undefined)?.route_config_name as string | undefined;
          })
          .find((n) => n !== undefined);
        const vhosts: Piece[] = (((rds && routes.get(rds)?.virtual_hosts) ?? []) as Obj[]).map((_, i) => ({
          parent,
          part: true,
          blame: blame('route', rds!, i),
          bootstrap: boot(usable, [inline(r.json, refs, i)]),
        }));
        return [
          {
            parent,
            blame: blame('listener', r.name),
            bootstrap: boot(usable, [inline(r.json, { ...refs, routes: new Map() })]),
          },
          ...vhosts,
        ];
      });
    },
  };
}

/** What became of one `envoy --mode validate` run. */
export type ValidateOutcome =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }
  | { kind: 'timed-out' };

/** Why a configuration was not accepted; `judged`: Envoy read it and refused (worth tracing to a document). */
export interface Refusal {
  message: string;
  judged: boolean;
}

/**
 * Envoy's verdict from a finished run: undefined only when it exited 0 and said the configuration
 * is OK. Everything else fails closed with a reason: a signal, a silent exit, a time-out.
 */
export function verdictOf(outcome: ValidateOutcome, timeoutMs: number): Refusal | undefined {
  const none = (message: string): Refusal => ({ message, judged: false });
  if (outcome.kind === 'timed-out') return none(`Envoy gave no verdict within ${timeoutMs} ms (killed)`);
  const { code, signal, stdout, stderr } = outcome;
  if (code === 0 && / OK\s*$/m.test(stdout)) return undefined;
  if (signal) return none(`Envoy was ended by ${signal} before giving a verdict`);
  const text = `${stdout}\n${stderr}`;
  const m = /error initializing configuration '[^']*': (.*)/.exec(text);
  if (m) return { message: m[1]!.trim(), judged: true };
  const last = text.trim().split('\n').pop()?.trim();
  if (code === 0) return none(`Envoy exited 0 without saying the configuration is OK${last ? `: ${last}` : ''}`);
  return none(last ? `${last} (exit ${String(code)})` : `Envoy exited ${String(code)} and printed nothing`);
}

/** Output kept of a run: Envoy's error is on its last lines. */
const MAX_OUTPUT = 1 << 20;
/** How long after Envoy's exit its output may still arrive through the pipes. */
const PIPE_GRACE_MS = 2000;

function runValidate(binary: string, file: string, timeoutMs: number): Promise<ValidateOutcome> {
  return new Promise((resolve, reject) => {
    // A process group of its own, so that the kill at the time-out reaches anything it started.
    const child = spawn(binary, ['--mode', 'validate', '-c', file, '-l', 'critical', '--disable-hot-restart'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout = (stdout + d).slice(-MAX_OUTPUT)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-MAX_OUTPUT)));
    // Both pipes read to their end: Envoy's verdict is its last line, and a loaded machine may deliver
    // it after the exit event.
    const drained = Promise.all([child.stdout, child.stderr].map((s) => new Promise((r) => s.once('close', r))));
    let timedOut = false;
    // A validation holds no state worth a graceful stop: at the time-out it is killed for good.
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL'); // the group is gone already
      }
    }, timeoutMs);
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(err.code === 'ENOENT' ? new Error(`Envoy binary not found: ${binary}`) : err);
    });
    // 'exit', then the pipes' end, but not for ever: a child of Envoy's that outlived it may hold the
    // pipes open, and the verdict is in by then.
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return resolve({ kind: 'timed-out' });
      const grace = new Promise((r) => setTimeout(r, PIPE_GRACE_MS).unref());
      void Promise.race([drained, grace]).then(() => resolve({ kind: 'exited', code, signal, stdout, stderr }));
    });
  });
}

/** Runs `envoy --mode validate`; resolves to Envoy's error text, or undefined when it accepts. */
async function validate(
  binary: string,
  bootstrap: Obj,
  timeoutMs: number,
  workDir: string,
): Promise<Refusal | undefined> {
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(workDir, 'fleetxds-envoy-check-'));
  try {
    const file = join(dir, 'bootstrap.json');
    await writeFile(file, JSON.stringify(bootstrap), { mode: 0o600 });
    return verdictOf(await runValidate(binary, file, timeoutMs), timeoutMs);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function versionOf(binary: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(binary, ['--version'], (err, stdout) =>
      resolve(err ? binary : (/\/(\d+\.\d+\.\d+)\//.exec(stdout)?.[1] ?? binary)),
    );
  });
}

/** Bounded concurrency: one Envoy process per core. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

export class EnvoyChecker {
  /** Envoy's verdict per (binary, group content): groups with the same resources share one run. */
  private readonly verdicts = new Map<string, Promise<Refusal | undefined>>();
  private readonly versions = new Map<string, Promise<string>>();
  readonly stats = { runs: 0, skipped: 0 };

  private readonly workDir: string;

  constructor(readonly settings: EnvoyCheckSettings) {
    this.workDir = settings.workDir ?? tmpdir();
  }

  /** Removes renderings a killed run left in the checker's own folder (never the system's). */
  async removeLeftovers(): Promise<void> {
    if (this.settings.workDir) await rm(this.settings.workDir, { recursive: true, force: true });
  }

  private version(binary: string): Promise<string> {
    let v = this.versions.get(binary);
    if (!v) this.versions.set(binary, (v = versionOf(binary)));
    return v;
  }

  /** Diagnostics for everything Envoy rejects in `config` (empty when all is accepted). */
  async check(model: Model, config: BuiltConfig, textOf: (file: string) => string | undefined): Promise<Diagnostic[]> {
    const sink = new DiagnosticSink(textOf);
    const timeoutMs = this.settings.timeoutMs ?? 30_000;
    const origins = config.origins ?? new Map();
    // A group of gRPC applications only is not Envoy's to judge: its TLS names the applications'
    // certificate providers, which no Envoy has.
    const jobs = [...config.groups.values()]
      .filter((g) => !isProxylessGroup(model, g.group))
      .flatMap((g) => this.settings.binaries.map((binary) => ({ g, binary })));
    const reported = new Set<string>();
    await mapLimit(jobs, availableParallelism(), async ({ g, binary }) => {
      const pieces = piecesOf(g, origins);
      const key = sha256Hex(`${binary}\n${JSON.stringify(pieces.whole)}`);
      let verdict = this.verdicts.get(key);
      if (verdict) this.stats.skipped++;
      else {
        this.stats.runs++;
        if (this.verdicts.size >= 4096) this.verdicts.clear();
        this.verdicts.set(key, (verdict = validate(binary, pieces.whole, timeoutMs, this.workDir)));
      }
      const refusal = await verdict;
      if (!refusal) return;
      this.verdicts.delete(key); // a rejected group is checked again next time (and traced each time)
      const envoy = `Envoy ${await this.version(binary)}`;
      if (!refusal.judged) {
        sink.error(
          Codes.ENVOY_REJECTED,
          undefined,
          [],
          `${envoy} could not check node group "${g.group}": ${refusal.message}`,
        );
        return;
      }
      // Find what Envoy rejects: each cluster alone (when the clusters fail), then each listener
      // and virtual host. A virtual host is blamed only when its listener alone passes.
      const run = (pieces: Piece[]) =>
        mapLimit(pieces, availableParallelism(), async (p) => ({
          p,
          error: (await validate(binary, p.bootstrap, timeoutMs, this.workDir))?.message,
        }));
      const clusterResults = (await validate(binary, pieces.clustersOnly, timeoutMs, this.workDir))
        ? await run(pieces.clusters())
        : [];
      const bad = new Set(clusterResults.filter((r) => r.error).map((r) => r.p.parent.slice('cluster/'.length)));
      const results = [...clusterResults, ...(await run(pieces.listeners(bad)))];
      const failedAlone = new Set(results.filter((r) => r.error && !r.p.part).map((r) => r.p.parent));
      const blamed = results.filter((r) => r.error && r.p.blame && (!r.p.part || !failedAlone.has(r.p.parent)));
      if (!blamed.length) {
        sink.error(
          Codes.ENVOY_REJECTED,
          undefined,
          [],
          `${envoy} rejects the configuration of node group "${g.group}": ${refusal.message}`,
        );
        return;
      }
      for (const { p, error: e } of blamed) {
        const { origin, vhost } = p.blame!;
        const originKey = (vhost !== undefined && origin.virtualHostOrigins?.[vhost]) || origin.origin;
        const dedupe = `${binary}|${originKey}|${e}`;
        if (reported.has(dedupe)) continue;
        reported.add(dedupe);
        const [kind, name] = originKey.split('/') as [string, string];
        const at = originIn(model, originKey);
        sink.error(
          Codes.ENVOY_REJECTED,
          at ? { origin: at, kind, name } : undefined,
          [],
          `${envoy} rejects it (node group "${g.group}"): ${e}`,
        );
      }
    });
    return sortDiagnostics(sink.diagnostics); // jobs finish in any order
  }
}
