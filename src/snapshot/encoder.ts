import { canonicalJson } from '../shared/canonical-json.ts';
import { isGrpcServerListener } from '../translate/grpc-server.ts';
import type { Derivable } from './derived.ts';
import { sha256Hex } from '../shared/hash.ts';
import { encodeJson, type ProtoIssue } from '../xds/proto-json.ts';
import { ResourceTypes, TypeUrls, messageName, type ResourceKind } from '../xds/resource-types.ts';
import { framedAny, framedStoredAny, lenField } from '../xds/wire.ts';
import { findByName, patchByName, patchedFrom, recordDelta } from '../shared/sorted-lists.ts';

/** One resource, encoded once; every transport and every client reuses these bytes. */
export interface EncodedResource extends Derivable {
  readonly kind: ResourceKind;
  readonly name: string;
  /** sha256 of kind + canonical JSON: the cache (and store) key. */
  readonly key: string;
  /** Its first 16 hex digits: the per-resource version (delta). */
  readonly version: string;
  /** Canonical proto3 JSON (REST, files, status pages, golden tests). */
  readonly json: Record<string, unknown>;
  /** google.protobuf.Any bytes. */
  readonly any: Buffer;
  /** `resources` field (2) of a DiscoveryResponse wrapping `any`, ready to concatenate. */
  readonly framed: Buffer;
  /** Proto/PGV problems; a resource with issues never reaches a snapshot. */
  readonly issues: readonly ProtoIssue[];
  /**
   * Sent only to clients that name it, never to wildcard subscribers: a proxyless gRPC API
   * listener. Envoy takes at most one API listener and logs every other one it gets over LDS.
   */
  readonly namedOnly: boolean;
  /** For a type with `parts` (ResourceType.parts): the message without that field, and its parts. */
  readonly parts?: ResourceParts;
}

/** A resource split as the encoder encodes it: what the store keeps part by part. */
export interface ResourceParts {
  readonly field: string;
  /** The message's bytes without the parts field. */
  readonly rest: Uint8Array;
  /** Each entry of the field, in order: its content key and its field bytes. */
  readonly entries: readonly { readonly key: string; readonly framed: Buffer }[];
}

/**
 * Where a restored resource reads its JSON text when first asked. A restart serves gRPC from the
 * stored bytes alone; reading every resource's text up front would be a large share of reading the
 * version. Stored resources and parts are content-addressed and never change.
 */
export interface StoredJson {
  /** The resource's text; a resource with parts has null in place of their field. */
  resource(key: string): string;
  part(key: string): string;
}

const NO_ISSUES: readonly ProtoIssue[] = [];

/**
 * A resource read back from the store. gRPC serves its bytes only; its JSON (REST, files, status)
 * is read and parsed from the stored text on first use. A class, not an object with a defined
 * getter: a restart makes tens of thousands of them.
 */
class RestoredResource implements EncodedResource {
  readonly version: string;
  readonly any: Buffer;
  readonly framed: Buffer;
  readonly issues = NO_ISSUES;
  readonly namedOnly: boolean;
  derived?: Map<string, Map<string, unknown>>;
  private parsed?: Record<string, unknown>;

  constructor(
    readonly kind: ResourceKind,
    readonly name: string,
    readonly key: string,
    private readonly texts: StoredJson,
    bytes: { any: Buffer; framed: Buffer },
    readonly parts?: ResourceParts,
  ) {
    this.version = key.slice(0, 16);
    this.any = bytes.any;
    this.framed = bytes.framed;
    // Listeners are few: read now to know whether they are API listeners.
    this.namedOnly = kind === 'listener' ? isNamedOnly(kind, this.json) : false;
  }

  /** Its JSON as text: the stored text when it is whole (nothing parsed or stringified). */
  get jsonText(): string {
    return this.parsed || this.parts ? JSON.stringify(this.json) : this.texts.resource(this.key);
  }

  get json(): Record<string, unknown> {
    if (this.parsed) return this.parsed;
    const whole = JSON.parse(this.texts.resource(this.key)) as Record<string, unknown>;
    // The field is null in place in the stored JSON: filled back where it was.
    if (this.parts)
      whole[this.parts.field] = this.parts.entries.map((e) => JSON.parse(this.texts.part(e.key)) as unknown);
    return (this.parsed = whole);
  }
}

/**
 * A resource's framed bytes: its message, followed by the field bytes of its parts when its type
 * has parts (what an encode produces, and what a restart rebuilds from the stored parts).
 */
function resourceBytes(
  kind: ResourceKind,
  message: Uint8Array,
  parts?: readonly { readonly framed: Buffer }[],
): { any: Buffer; framed: Buffer } {
  return framedAny(TypeUrls[kind], parts ? [message, ...parts.map((p) => p.framed)] : [message]);
}

/** A resource's JSON as text (a restored one has it without parsing). */
export function jsonText(r: EncodedResource): string {
  return r instanceof RestoredResource ? r.jsonText : JSON.stringify(r.json);
}

/**
 * Whether a resource is for explicit subscribers only (see EncodedResource.namedOnly): a gRPC
 * client's API listener, or a gRPC server's listener (Envoy would bind its port).
 */
export function isNamedOnly(kind: ResourceKind, json: Record<string, unknown>): boolean {
  return kind === 'listener' && (json.api_listener !== undefined || isGrpcServerListener(json.name as string));
}

/**
 * The same resource with different JSON (config sources pointed at another transport): encoded
 * outside the cache, keeping the original's name and version.
 */
export function encodeVariant(r: EncodedResource, json: Record<string, unknown>): EncodedResource {
  const typeUrl = TypeUrls[r.kind];
  const { bytes, issues } = encodeJson(messageName(typeUrl), json);
  const { derived: _cachesOfTheOriginal, ...own } = r;
  return { ...own, json, ...resourceBytes(r.kind, bytes), issues };
}

export interface EncoderStats {
  encoded: number;
  reused: number;
  /** Entries of a type's `parts` field encoded (a route configuration's virtual hosts). */
  partsEncoded: number;
}

/** Encoded resources of one translated list. */
export type EncodedList = readonly EncodedResource[] & {
  /** Whether any of them has proto/PGV problems (then the build reports them). */
  readonly issues: boolean;
};

/** One entry of a `parts` field, encoded alone: its hash, its framed field bytes, its problems. */
interface EncodedPart {
  key: string;
  framed: Buffer;
  issues: readonly ProtoIssue[];
}

function withoutField(json: Record<string, unknown>, field: string): Record<string, unknown> {
  const { [field]: _entries, ...rest } = json;
  return rest;
}

/** An issue found inside entry `i` of field `field`, with the path it has in the whole message. */
function issueIn(field: string, i: number, issue: ProtoIssue): ProtoIssue {
  return { ...issue, path: `${field}[${i}]${issue.path ? `.${issue.path}` : ''}` };
}

/**
 * Content-addressed cache of encoded resources across builds: an unchanged resource (same kind and
 * canonical JSON) is never encoded again, and identical resources in different node groups share
 * one encoding.
 *
 * What no build uses any more is dropped in sweeps, run by `finishBuild` once the entries made
 * since the last sweep are a quarter of the cache: a one-resource change then costs that resource,
 * not a visit of the 20,000 entries a build keeps, and the cache never holds more than a quarter
 * of garbage.
 */
export class ResourceEncoder {
  private cache = new Map<string, EncodedResource>();
  private parts = new Map<string, EncodedPart>();
  /** Part keys of each cached resource that has parts: parts live as long as a resource uses them. */
  private partsOf = new Map<string, readonly string[]>();
  private partByObject = new WeakMap<object, EncodedPart>();
  readonly stats: EncoderStats = { encoded: 0, reused: 0, partsEncoded: 0 };

  /** The same JSON object (memoized translation) maps to the same encoding without rehashing. */
  private byObject = new WeakMap<object, EncodedResource>();
  /** Lists encoded by recent builds, by the translated list's identity (kept while a build uses them). */
  private lists = new Map<readonly object[], EncodedList>();
  /** What the build under way used: its lists, and resources encoded alone (`encode`). */
  private usedLists = new Set<readonly object[]>();
  private usedAlone = new Set<EncodedResource>();
  /** Entries added to the cache since the last sweep: at most this many are garbage. */
  private added = 0;

  /**
   * A list of translated resources, encoded: the same list (a section translation kept because its
   * inputs did not change) gives back the same array without looking at each resource; a list
   * patched from one encoded before (src/shared/sorted-lists.ts) is that list with its changed
   * names encoded.
   */
  encodeList(items: readonly { kind: ResourceKind; name: string; json: Record<string, unknown> }[]): EncodedList {
    this.usedLists.add(items);
    const hit = this.lists.get(items);
    if (hit) {
      this.stats.reused += hit.length;
      return hit;
    }
    const patch = patchedFrom(items);
    const before = patch && this.lists.get(patch.from);
    let list: EncodedList;
    if (patch && before && !before.issues) {
      let issues = false;
      const patched = patchByName(before, patch.names, (name) => {
        const t = findByName(items, name);
        const r = t && this.encoded(t.kind, t.name, t.json);
        if (r?.issues.length) issues = true;
        return r;
      });
      list = Object.assign(patched, { issues });
      recordDelta(list, before, patch.names);
    } else {
      const all = items.map((t) => this.encoded(t.kind, t.name, t.json));
      list = Object.assign(all, { issues: all.some((r) => r.issues.length > 0) });
    }
    this.lists.set(items, list);
    return list;
  }

  /** One resource outside any list (kept through sweeps while builds use it). */
  encode(kind: ResourceKind, name: string, json: Record<string, unknown>): EncodedResource {
    const res = this.encoded(kind, name, json);
    this.usedAlone.add(res);
    return res;
  }

  /** By JSON object identity while its encoding is cached, else by content. */
  private encoded(kind: ResourceKind, name: string, json: Record<string, unknown>): EncodedResource {
    const res = this.byObject.get(json);
    if (res && this.cache.get(res.key) === res) {
      this.stats.reused++;
      return res;
    }
    return this.encodeByContent(kind, name, json);
  }

  private encodeByContent(kind: ResourceKind, name: string, json: Record<string, unknown>): EncodedResource {
    const spec = ResourceTypes[kind].parts;
    const entries = spec && json[spec.field];
    const split =
      spec && Array.isArray(entries) ? { spec, entries: entries.map((e) => this.part(spec, e)) } : undefined;
    const rest = split ? withoutField(json, split.spec.field) : json;
    const canonical = canonicalJson(rest);
    const partKeys = split?.entries.map((p) => p.key);
    // With parts, the key covers the rest of the message and the parts' own keys, in order.
    const key = sha256Hex(`${kind}\u0000${canonical}${partKeys ? `\u0000${partKeys.join(',')}` : ''}`);
    const hit = this.cache.get(key);
    if (hit) {
      this.stats.reused++;
      this.byObject.set(json, hit);
      return hit;
    }
    this.stats.encoded++;
    const typeUrl = TypeUrls[kind];
    const encoded = encodeJson(messageName(typeUrl), rest);
    let issues = encoded.issues;
    if (split) {
      issues = [...issues, ...split.entries.flatMap((p, i) => p.issues.map((x) => issueIn(split.spec.field, i, x)))];
    }
    const res: EncodedResource = {
      kind,
      name,
      key,
      version: key.slice(0, 16),
      json,
      ...resourceBytes(kind, encoded.bytes, split?.entries),
      issues,
      namedOnly: isNamedOnly(kind, json),
      ...(split && { parts: { field: split.spec.field, rest: encoded.bytes, entries: split.entries } }),
    };
    this.cache.set(key, res);
    this.added++;
    if (partKeys) this.partsOf.set(key, partKeys);
    this.byObject.set(json, res);
    return res;
  }

  /** One entry of a `parts` field: by object identity, then by content, encoded only if new. */
  private part(spec: { field: string; number: number; message: string }, entry: unknown): EncodedPart {
    const obj = typeof entry === 'object' && entry !== null ? entry : undefined;
    let p = obj && this.partByObject.get(obj);
    if (!p || this.parts.get(p.key) !== p) {
      const key = sha256Hex(`${spec.message}\u0000${canonicalJson(entry)}`);
      p = this.parts.get(key);
      if (!p) {
        this.stats.partsEncoded++;
        const { bytes, issues } = encodeJson(spec.message, entry);
        p = { key, framed: lenField(spec.number, bytes), issues };
        this.parts.set(key, p);
      }
      if (obj) this.partByObject.set(obj, p);
    }
    return p;
  }

  /**
   * Rebuilds a resource stored earlier (restart path) and makes it known to the cache; a resource
   * stored by parts gets its parts back in the cache too, so the next edit re-encodes only its own.
   */
  restore(
    kind: ResourceKind,
    name: string,
    key: string,
    stored: Buffer | ResourceParts,
    texts: StoredJson,
  ): EncodedResource {
    const hit = this.cache.get(key);
    if (hit) return hit;
    const parts = Buffer.isBuffer(stored) ? undefined : stored;
    const bytes = parts ? resourceBytes(kind, parts.rest, parts.entries) : framedStoredAny(stored as Buffer);
    const res = new RestoredResource(kind, name, key, texts, bytes, parts);
    // Served, not garbage: not counted towards a sweep (the next build finds it by content).
    this.cache.set(key, res);
    if (parts) {
      for (const e of parts.entries)
        if (!this.parts.has(e.key)) this.parts.set(e.key, { key: e.key, framed: e.framed, issues: [] });
      this.partsOf.set(
        key,
        parts.entries.map((e) => e.key),
      );
    }
    return res;
  }

  /**
   * Call after a build (successful or not). Lists it did not use are forgotten now; entries no kept
   * list uses are swept once as many entries were added since the last sweep as a quarter of the
   * cache (every build while the cache is small).
   */
  finishBuild(): void {
    for (const items of this.lists.keys()) if (!this.usedLists.has(items)) this.lists.delete(items);
    if (this.added * 4 >= this.cache.size) this.sweep();
    this.usedLists.clear();
    this.usedAlone.clear();
  }

  private sweep(): void {
    const live = new Set<string>();
    for (const list of this.lists.values()) for (const r of list) live.add(r.key);
    for (const r of this.usedAlone) live.add(r.key);
    for (const k of this.cache.keys())
      if (!live.has(k)) {
        this.cache.delete(k);
        this.partsOf.delete(k);
      }
    const liveParts = new Set<string>();
    for (const keys of this.partsOf.values()) for (const k of keys) liveParts.add(k);
    for (const k of this.parts.keys()) if (!liveParts.has(k)) this.parts.delete(k);
    this.added = 0;
  }

  get size(): number {
    return this.cache.size;
  }
}
