/**
 * EnvoyPatch documents applied to a group's translated resources, after translation and before
 * encoding: in document order within a file, files by name. Each patched resource is a copy whose
 * origin is the last patch that changed it (so a problem Envoy or the proto checks find in it is
 * reported at that patch), and which records every patch that changed it.
 *
 * Refused, as problems reported at the patch: a JSON patch operation that fails (its `test`s
 * included), a filter anchor that does not exist, a path another patch already changed on the
 * same resource, a patch that grows a resource by more than MAX_PATCH_GROWTH bytes (checked per
 * operation, before a copy is made), a renamed resource or a resource replaced by something that
 * is not one, a reference to a cluster the group does not have, and (unless the patch allows it)
 * any change to how the proxy reaches fleetxds: its config sources, and routes to its xDS clusters.
 * Keys are compared as Envoy decodes them: `edsConfig` is `eds_config`.
 */
import jsonPatch from 'fast-json-patch';
import mergePatch from 'json-merge-patch';
import type { EnvoyPatchDoc } from '../model/patch-schema.ts';
import { originKey, originOf, type Model } from '../model/types.ts';
import { compileGlob } from '../shared/glob.ts';
import type { PathSegment } from '../shared/diagnostics.ts';
import { RESOURCE_KINDS, type ResourceKind } from '../xds/resource-types.ts';
import type { JsonObject } from '../features/kit/envoy-json.ts';
import type { GroupResources, TranslatedResource } from './index.ts';
import type { TranslationMemo } from './memo.ts';
import { GRPC_XDS_CLUSTER, REST_XDS_CLUSTER } from '../xds/xds-clusters.ts';

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
/** Keys whose string value names a cluster requests or calls go to. */
const CLUSTER_KEYS = new Set(['cluster', 'cluster_name']);
const XDS_CLUSTERS = new Set([GRPC_XDS_CLUSTER, REST_XDS_CLUSTER]);
/**
 * The most bytes (as JSON) one patch may add to one resource: a JSON patch that copies a resource
 * into itself doubles it per operation, so growth is counted before each copy, add and replace.
 */
const MAX_PATCH_GROWTH = 1024 * 1024;

/** A JSON key as protobuf's JSON parser reads it: the lowerCamelCase JSON name is the field's name. */
const fieldName = (k: string) => (/[A-Z]/.test(k) ? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) : k);

const jsonSize = (v: unknown) => (v === undefined ? 0 : (JSON.stringify(v)?.length ?? 0));

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
  // Every kind's list, those no patch targets too: a hit hands back `translated` as it was then.
  const lists = RESOURCE_KINDS.map((k) => translated[k]);
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
  for (const [key, v] of Object.entries(json as JsonObject)) {
    const k = fieldName(key);
    if (CONTROL_PLANE_KEYS.has(k)) out.push(`${k}:${JSON.stringify(canonicalKeys(v))}`);
    else if (typeof v === 'string' && CLUSTER_KEYS.has(k) && XDS_CLUSTERS.has(v)) out.push(`to:${v}`);
    else controlPlaneParts(v, out);
  }
  return out;
}

/** `json` with every key spelt as its field's name. */
function canonicalKeys(json: unknown): unknown {
  if (Array.isArray(json)) return json.map(canonicalKeys);
  if (!json || typeof json !== 'object') return json;
  return Object.fromEntries(Object.entries(json as JsonObject).map(([k, v]) => [fieldName(k), canonicalKeys(v)]));
}

/** The clusters a resource sends requests or calls to (outside its config sources), with where. */
function clusterReferences(json: unknown, at = '', out: { cluster: string; path: string }[] = []) {
  if (!json || typeof json !== 'object') return out;
  for (const [key, v] of Object.entries(json as JsonObject)) {
    const k = fieldName(key);
    if (CONTROL_PLANE_KEYS.has(k)) continue;
    const path = `${at}/${key}`;
    if (typeof v === 'string' && CLUSTER_KEYS.has(k)) out.push({ cluster: v, path });
    else if (k === 'weighted_clusters' && v && typeof v === 'object')
      for (const [i, c] of ((v as JsonObject).clusters as JsonObject[] | undefined)?.entries() ?? [])
        if (typeof c?.name === 'string') out.push({ cluster: c.name, path: `${path}/clusters/${i}/name` });
        else clusterReferences(c, `${path}/clusters/${i}`, out);
    else clusterReferences(v, path, out);
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
    this.checkReferences();
    return { resources: this.lists, problems: this.problems, matched: this.matched, changedBy: this.changedBy };
  }

  /** A patched resource refers only to clusters its group has (the xDS clusters are the guard's). */
  private checkReferences(): void {
    const clusters = new Set(this.lists.cluster.map((c) => c.name));
    for (const kind of ['listener', 'route', 'cluster'] as const)
      for (const r of this.lists[kind]) {
        const last = r.patches?.at(-1)?.patch;
        if (!last) continue;
        for (const ref of clusterReferences(r.json))
          if (!clusters.has(ref.cluster) && !XDS_CLUSTERS.has(ref.cluster)) {
            this.problems.push({
              patch: last,
              path: [],
              message:
                `${kind}/${r.name} refers to cluster "${ref.cluster}" at ${ref.path}, ` +
                'which its node group does not have',
            });
            break;
          }
      }
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
      // YAML aliases can make a short merge patch a large value.
      if (jsonSize(p.merge) > MAX_PATCH_GROWTH) {
        this.problem(p, ['merge'], `adds more than ${MAX_PATCH_GROWTH} bytes to ${key}${base}, the most one patch may`);
        return undefined;
      }
      out = mergePatch.apply<JsonObject>(out, p.merge);
      paths = mergePaths(p.merge);
    } else if (p.jsonPatch) {
      const patched = this.applyOperations(p, key, base, out);
      if (!patched) return undefined;
      out = patched.doc as JsonObject;
      // What the operations change: a test only reads, a copy only reads its source, a move empties it.
      paths = p.jsonPatch
        .filter((op) => op.op !== 'test')
        .flatMap((op) => [op.path, ...(op.op === 'move' && op.from !== undefined ? [op.from] : [])]);
    } else if (p.filters) {
      if (!this.addFilters(p, key, out)) return undefined;
    }
    if (!out || typeof out !== 'object' || Array.isArray(out)) {
      this.problem(
        p,
        [],
        `replaces ${key}${base} with ${JSON.stringify(out)}: a patch changes a resource, not what it is`,
      );
      return undefined;
    }
    if (out.name !== json.name) {
      this.problem(
        p,
        [],
        `renames ${key}${base} to ${JSON.stringify(out.name)}: proxies and references find it by its name`,
      );
      return undefined;
    }
    if (!p.allowControlPlaneChanges && !sameParts(before, controlPlaneParts(out))) {
      this.problem(
        p,
        [],
        `changes how proxies reach fleetxds in ${key} (a config source, or requests sent to its xDS cluster); ` +
          'set allowControlPlaneChanges: true if meant',
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

  /**
   * The JSON patch's operations applied one by one to `doc` (a copy), or undefined with a problem:
   * an operation that fails, or growth past MAX_PATCH_GROWTH, found before the operation runs.
   */
  private applyOperations(p: EnvoyPatchDoc, key: string, base: string, doc: JsonObject): { doc: unknown } | undefined {
    let out: unknown = doc;
    let grown = 0;
    for (const [i, op] of (p.jsonPatch as jsonPatch.Operation[]).entries()) {
      try {
        if (op.op === 'copy') grown += jsonSize(jsonPatch.getValueByPointer(out, op.from));
        else if (op.op === 'add' || op.op === 'replace') grown += jsonSize(op.value);
        if (grown > MAX_PATCH_GROWTH) {
          this.problem(
            p,
            ['jsonPatch', i],
            `on ${key}${base}: adds more than ${MAX_PATCH_GROWTH} bytes to the resource, the most one patch may`,
          );
          return undefined;
        }
        out = jsonPatch.applyOperation(out, op, true, true, true, i).newDocument;
      } catch (err) {
        const e = err as { name?: string; message: string };
        const what = e.name === 'TEST_OPERATION_FAILED' ? 'its test does not hold' : e.message.split('\n')[0];
        this.problem(p, ['jsonPatch', i], `on ${key}${base}: ${what}`);
        return undefined;
      }
    }
    return { doc: out };
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
