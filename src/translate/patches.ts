/**
 * EnvoyPatch documents applied to a group's translated resources, after translation and before
 * encoding: in document order within a file, files by name. Each patched resource is a copy whose
 * origin is the last patch that changed it (so a problem Envoy or the proto checks find in it is
 * reported at that patch), and which records every patch that changed it.
 *
 * Refused, as problems reported at the patch: a JSON patch operation that fails (its `test`s
 * included), a filter anchor that does not exist, a path another patch already changed on the
 * same resource, and (unless the patch allows it) any change to how the proxy reaches fleetxds.
 */
import jsonPatch from 'fast-json-patch';
import mergePatch from 'json-merge-patch';
import type { EnvoyPatchDoc } from '../model/patch-schema.ts';
import { originKey, originOf, type Model } from '../model/types.ts';
import { compileGlob } from '../shared/glob.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import type { ResourceKind } from '../xds/resource-types.ts';
import type { JsonObject } from './common.ts';
import type { GroupResources, TranslatedResource } from './index.ts';
import type { TranslationMemo } from './memo.ts';

export interface PatchProblem {
  patch: string;
  path: PathSegment[];
  message: string;
}

export interface PatchedGroup {
  resources: GroupResources;
  problems: PatchProblem[];
  /** Patches that matched some resource of the group. */
  matched: ReadonlySet<string>;
  /** Resource (`kind/name`) -> the patches that changed it, in order. */
  changedBy: ReadonlyMap<string, readonly string[]>;
}

const ROUTER = 'envoy.filters.http.router';
const HCM = 'envoy.filters.network.http_connection_manager';
/** Keys under which a resource says how the proxy reaches fleetxds. */
const CONTROL_PLANE_KEYS = new Set(['config_source', 'eds_config', 'sds_config', 'ads', 'cds_config', 'lds_config']);

/** The patches of a group, in the order they apply: by file, then document within the file. */
export function groupPatches(model: Model, group: string): EnvoyPatchDoc[] {
  const order = (p: EnvoyPatchDoc) => {
    const o = originOf(p);
    return o ? [o.file, o.index] : ['', 0];
  };
  return (model.envoyPatches ?? [])
    .filter((p) => !p.groups || p.groups.includes(group))
    .sort((a, b) => {
      const [fa, ia] = order(a);
      const [fb, ib] = order(b);
      return fa! < fb! ? -1 : fa! > fb! ? 1 : (ia as number) - (ib as number) || (a.name < b.name ? -1 : 1);
    });
}

export function patchGroup(
  model: Model,
  group: string,
  translated: GroupResources,
  memo: TranslationMemo,
): PatchedGroup {
  const lists = [translated.listener, translated.route, translated.cluster, translated.endpoint];
  return memo.section(`patch\u0000${group}`, [model.envoyPatches, ...lists], () => {
    const patches = groupPatches(model, group);
    if (!patches.length) return { resources: translated, problems: [], matched: new Set(), changedBy: new Map() };
    return new Patcher(translated).applyAll(patches);
  });
}

/** Leaf paths a merge patch sets or removes, as JSON pointers. */
function mergePaths(patch: unknown, at = ''): string[] {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return [at];
  return Object.entries(patch as JsonObject).flatMap(([k, v]) =>
    mergePaths(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`),
  );
}

/**
 * Every subtree of a resource under a control-plane key, as text, sorted: the same list before and
 * after a patch that moved them (a filter inserted before them) but changed none.
 */
function controlPlaneParts(json: unknown, out: string[] = []): string[] {
  if (!json || typeof json !== 'object') return out;
  for (const [k, v] of Object.entries(json as JsonObject)) {
    if (CONTROL_PLANE_KEYS.has(k)) out.push(`${k}:${JSON.stringify(v)}`);
    else controlPlaneParts(v, out);
  }
  return out;
}

function sameParts(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  a.sort();
  b.sort();
  return a.every((x, i) => x === b[i]);
}

const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

class Patcher {
  private readonly lists: Record<ResourceKind, TranslatedResource[]>;
  private readonly problems: PatchProblem[] = [];
  private readonly matched = new Set<string>();
  private readonly changedBy = new Map<string, string[]>();
  /** Resource key -> paths changed so far, with the patch that changed each. */
  private readonly touched = new Map<string, { path: string; patch: string }[]>();
  /** The paths the last successful change set (for the resource's record of its patches). */
  private lastPaths: string[] = [];

  constructor(private readonly translated: GroupResources) {
    this.lists = { ...translated } as Record<ResourceKind, TranslatedResource[]>;
  }

  applyAll(patches: readonly EnvoyPatchDoc[]): PatchedGroup {
    for (const p of patches) this.apply(p);
    return { resources: this.lists, problems: this.problems, matched: this.matched, changedBy: this.changedBy };
  }

  private problem(p: EnvoyPatchDoc, path: PathSegment[], message: string): void {
    this.problems.push({ patch: p.name, path, message });
  }

  private apply(p: EnvoyPatchDoc): void {
    const glob = compileGlob(p.target.name);
    if (p.target.kind === 'virtualHost') {
      for (let i = 0; i < this.lists.route.length; i++) {
        const r = this.lists.route[i]!;
        const vhosts = [...((r.json.virtual_hosts ?? []) as JsonObject[])];
        const origins = [...(r.virtualHostOrigins ?? [])];
        const record: string[] = [];
        let changed = false;
        vhosts.forEach((vh, j) => {
          if (!glob.test(vh.name as string)) return;
          const out = this.change(p, `route/${r.name}`, vh, `/virtual_hosts/${j}`);
          if (!out) return;
          vhosts[j] = out;
          origins[j] = originKey('EnvoyPatch', p.name);
          record.push(...this.lastPaths);
          changed = true;
        });
        if (changed)
          this.replace('route', i, {
            ...r,
            json: { ...r.json, virtual_hosts: vhosts },
            virtualHostOrigins: origins,
            patches: [...(r.patches ?? []), { patch: p.name, paths: record }],
          });
      }
      return;
    }
    const kind = p.target.kind as ResourceKind;
    this.lists[kind].forEach((r, i) => {
      if (!glob.test(r.name)) return;
      const changed = this.change(p, `${kind}/${r.name}`, r.json, '');
      if (changed)
        this.replace(kind, i, {
          ...r,
          json: changed,
          origin: originKey('EnvoyPatch', p.name),
          patches: [...(r.patches ?? []), { patch: p.name, paths: this.lastPaths }],
        });
    });
  }

  private replace(kind: ResourceKind, i: number, r: TranslatedResource): void {
    if (this.lists[kind] === this.translated[kind]) this.lists[kind] = [...this.translated[kind]];
    this.lists[kind][i] = r;
  }

  /** The patched copy of `json` (at `base` inside resource `key`), or undefined when the patch fails. */
  private change(p: EnvoyPatchDoc, key: string, json: JsonObject, base: string): JsonObject | undefined {
    this.matched.add(p.name);
    const before = controlPlaneParts(json);
    let out = structuredClone(json);
    let paths: string[] = [];
    if (p.merge) {
      out = mergePatch.apply<JsonObject>(out, p.merge);
      paths = mergePaths(p.merge);
    } else if (p.jsonPatch) {
      try {
        jsonPatch.applyPatch(out, p.jsonPatch as jsonPatch.Operation[], true, true);
      } catch (err) {
        const e = err as { index?: number; name?: string; message: string };
        const what = e.name === 'TEST_OPERATION_FAILED' ? 'its test does not hold' : e.message.split('\n')[0];
        this.problem(p, ['jsonPatch', e.index ?? 0], `on ${key}${base}: ${what}`);
        return undefined;
      }
      // What the operations change: a test only reads, a copy only reads its source, a move empties it.
      paths = p.jsonPatch
        .filter((op) => op.op !== 'test')
        .flatMap((op) => [op.path, ...(op.op === 'move' && op.from !== undefined ? [op.from] : [])]);
    } else if (p.filters) {
      if (!this.addFilters(p, key, out)) return undefined;
    }
    if (!p.allowControlPlaneChanges && !sameParts(before, controlPlaneParts(out))) {
      this.problem(
        p,
        [],
        `changes how proxies reach fleetxds in ${key} (a config source); set allowControlPlaneChanges: true if meant`,
      );
      return undefined;
    }
    const seen = this.touched.get(key) ?? [];
    for (const path of paths.map((x) => base + x)) {
      const clash = seen.find((t) => t.patch !== p.name && overlaps(t.path, path));
      if (clash) {
        this.problem(p, [], `changes ${key} at ${path}, which EnvoyPatch "${clash.patch}" changes too`);
        return undefined;
      }
      seen.push({ path, patch: p.name });
    }
    this.touched.set(key, seen);
    this.lastPaths = paths.map((x) => base + x);
    const by = this.changedBy.get(key) ?? [];
    if (by.at(-1) !== p.name) this.changedBy.set(key, [...by, p.name]);
    return out;
  }

  /** Inserts the patch's filters into every chain (network) or connection manager (HTTP) of a listener. */
  private addFilters(p: EnvoyPatchDoc, key: string, listener: JsonObject): boolean {
    const chains = (listener.filter_chains ?? []) as { filters?: JsonObject[] }[];
    const managers = chains.flatMap((c) => (c.filters ?? []).filter((f) => f.name === HCM));
    if (p.filters!.http && !managers.length) {
      this.problem(p, ['filters', 'http'], `${key} has no HTTP connection manager`);
      return false;
    }
    const insert = (
      list: JsonObject[],
      adds: NonNullable<EnvoyPatchDoc['filters']>['http'],
      at: 'http' | 'network',
    ) => {
      for (const [i, f] of (adds ?? []).entries()) {
        const anchor = f.before ?? f.after ?? (at === 'http' ? ROUTER : undefined);
        let pos = 0;
        if (anchor !== undefined) {
          const j = list.findIndex((x) => x.name === anchor);
          if (j < 0) {
            this.problem(p, ['filters', at, i, f.after ? 'after' : 'before'], `${key} has no filter "${anchor}"`);
            return false;
          }
          pos = f.after ? j + 1 : j;
        }
        list.splice(pos, 0, { name: f.name, typed_config: f.typedConfig });
      }
      return true;
    };
    for (const m of managers) {
      const hcm = m.typed_config as JsonObject;
      if (!insert((hcm.http_filters ??= []) as JsonObject[], p.filters!.http, 'http')) return false;
    }
    for (const c of chains) if (!insert((c.filters ??= []), p.filters!.network, 'network')) return false;
    return true;
  }
}
