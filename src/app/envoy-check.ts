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
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Codes, sortDiagnostics, type Diagnostic } from '../shared/diagnostics.ts';
import { sha256Hex } from '../shared/hash.ts';
import { DiagnosticSink } from '../model/diagnostic-sink.ts';
import { originIn, type Model } from '../model/types.ts';
import type { BuiltConfig, ResourceOrigin } from '../snapshot/build.ts';
import { rewriteAdsReferences } from '../snapshot/config-sources.ts';
import type { GroupSnapshot } from '../snapshot/group-snapshot.ts';

export interface EnvoyCheckSettings {
  /** Envoy binaries to check with (every release the fleet runs). */
  binaries: string[];
  timeoutMs?: number;
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

/** Replaces ADS references by the referenced resource inline (endpoints, routes) or a static secret name. */
function inline(json: Obj, endpoints: ReadonlyMap<string, Obj>, routes: ReadonlyMap<string, Obj>, vhost?: number): Obj {
  return rewriteAdsReferences(json, {
    eds: ({ eds_cluster_config: _, ...cluster }, name) => ({
      ...cluster,
      type: 'STATIC',
      load_assignment: endpoints.get(name) ?? { cluster_name: name },
    }),
    rds: ({ rds: _, ...hcm }, name) => {
      const rc = routes.get(name) ?? { name };
      return { ...hcm, route_config: vhost === undefined ? rc : { ...rc, virtual_hosts: [rc.virtual_hosts[vhost]] } };
    },
    sds: ({ sds_config: _, ...config }) => config, // a name alone refers to a static secret
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
  const secrets = [...g.types.secret.resources.values()].map((r) => r.json);
  const clusters = [...g.types.cluster.resources.values()].map((r) => ({
    name: r.name,
    json: inline(r.json, endpoints, routes),
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
      listeners.map((r) => inline(r.json, endpoints, routes)),
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
        const rds = (r.json as Obj).filter_chains?.[0]?.filters?.[0]?.typed_config?.rds?.route_config_name as
          string | undefined;
        const vhosts: Piece[] = ((rds && routes.get(rds)?.virtual_hosts) ?? []).map((_: unknown, i: number) => ({
          parent,
          part: true,
          blame: blame('route', rds!, i),
          bootstrap: boot(usable, [inline(r.json, endpoints, routes, i)]),
        }));
        return [
          { parent, blame: blame('listener', r.name), bootstrap: boot(usable, [inline(r.json, endpoints, new Map())]) },
          ...vhosts,
        ];
      });
    },
  };
}

/** Runs `envoy --mode validate`; resolves to Envoy's error text, or undefined when it accepts. */
async function validate(binary: string, bootstrap: Obj, timeoutMs: number): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), 'fleetxds-envoy-check-'));
  try {
    const file = join(dir, 'bootstrap.json');
    await writeFile(file, JSON.stringify(bootstrap), { mode: 0o600 });
    return await new Promise((resolve, reject) => {
      execFile(
        binary,
        ['--mode', 'validate', '-c', file, '-l', 'critical', '--disable-hot-restart'],
        { timeout: timeoutMs, maxBuffer: 4 << 20 },
        (err, stdout, stderr) => {
          if (!err) return resolve(undefined);
          const text = `${stdout}\n${stderr}`;
          if ((err as NodeJS.ErrnoException).code === 'ENOENT')
            return reject(new Error(`Envoy binary not found: ${binary}`));
          const m = /error initializing configuration '[^']*': (.*)/.exec(text);
          resolve(
            (m?.[1] ?? text.trim().split('\n').pop() ?? `exit ${String((err as { code?: unknown }).code)}`).trim(),
          );
        },
      );
    });
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
  const out: R[] = new Array(items.length);
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
  private readonly verdicts = new Map<string, Promise<string | undefined>>();
  private readonly versions = new Map<string, Promise<string>>();
  readonly stats = { runs: 0, skipped: 0 };

  constructor(readonly settings: EnvoyCheckSettings) {}

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
    const jobs = [...config.groups.values()].flatMap((g) => this.settings.binaries.map((binary) => ({ g, binary })));
    const reported = new Set<string>();
    await mapLimit(jobs, availableParallelism(), async ({ g, binary }) => {
      const pieces = piecesOf(g, origins);
      const key = sha256Hex(`${binary}\n${JSON.stringify(pieces.whole)}`);
      let verdict = this.verdicts.get(key);
      if (verdict) this.stats.skipped++;
      else {
        this.stats.runs++;
        if (this.verdicts.size >= 4096) this.verdicts.clear();
        this.verdicts.set(key, (verdict = validate(binary, pieces.whole, timeoutMs)));
      }
      const error = await verdict;
      if (!error) return;
      this.verdicts.delete(key); // a rejected group is checked again next time (and traced each time)
      const envoy = `Envoy ${await this.version(binary)}`;
      // Find what Envoy rejects: each cluster alone (when the clusters fail), then each listener
      // and virtual host. A virtual host is blamed only when its listener alone passes.
      const run = (pieces: Piece[]) =>
        mapLimit(pieces, availableParallelism(), async (p) => ({
          p,
          error: await validate(binary, p.bootstrap, timeoutMs),
        }));
      const clusterResults = (await validate(binary, pieces.clustersOnly, timeoutMs))
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
          `${envoy} rejects the configuration of node group "${g.group}": ${error}`,
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
