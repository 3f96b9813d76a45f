import { DEFAULT_GROUP, type Model } from './types.ts';
import type { NodeGroupDoc } from './schema.ts';
import { compileGlob, type Glob } from '../shared/glob.ts';
import { localitySelects, type LocalitySelectDoc } from '../features/locality/schema.ts';

/** What we know of a node when it connects (the first request of a stream, or every REST poll). */
export interface NodeIdentity {
  id: string;
  cluster: string;
  metadata: Record<string, unknown>;
  /** Where the node says it runs (Envoy's node.locality); absent when it says nothing. */
  locality?: NodeLocality;
}

/** A node's region, zone and sub-zone, empty where not given. */
export interface NodeLocality {
  readonly region: string;
  readonly zone: string;
  readonly subZone: string;
}

/** A locality from what a client sent (either field spelling), or undefined when it names none. */
export function nodeLocality(
  l: { region?: unknown; zone?: unknown; sub_zone?: unknown; subZone?: unknown } | null | undefined,
): NodeLocality | undefined {
  if (!l) return undefined;
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  const out = { region: text(l.region), zone: text(l.zone), subZone: text(l.sub_zone ?? l.subZone) };
  return out.region || out.zone || out.subZone ? out : undefined;
}

interface CompiledGroup {
  name: string;
  cluster?: string;
  id?: Glob;
  metadata?: [string, string][];
  locality?: LocalitySelectDoc;
}

/**
 * Node -> group: groups are tried by priority (higher first), then name; the first whose every
 * criterion holds wins; nodes no group matches get `default`.
 */
export class NodeGroupResolver {
  private readonly groups: CompiledGroup[];

  /** `nodeGroups`: what it was made from (a serving thread makes its own from them). */
  constructor(readonly nodeGroups: readonly NodeGroupDoc[]) {
    this.groups = [...nodeGroups]
      .filter((g) => g.name !== DEFAULT_GROUP && g.match)
      .sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || (a.name < b.name ? -1 : 1))
      .map((g) => ({
        name: g.name,
        cluster: g.match!.cluster,
        id: g.match!.idPattern ? compileGlob(g.match!.idPattern) : undefined,
        metadata: g.match!.metadata ? Object.entries(g.match!.metadata) : undefined,
        locality: g.match!.locality,
      }));
  }

  static forModel(model: Model): NodeGroupResolver {
    return new NodeGroupResolver(model.nodeGroups);
  }

  resolve(node: NodeIdentity): string {
    for (const g of this.groups) {
      if (g.cluster !== undefined && node.cluster !== g.cluster) continue;
      if (g.id && !g.id.test(node.id)) continue;
      if (g.locality && !localitySelects(g.locality, node.locality)) continue;
      if (g.metadata && !g.metadata.every(([k, v]) => metadataText(node.metadata[k]) === v && k in node.metadata))
        continue;
      return g.name;
    }
    return DEFAULT_GROUP;
  }
}

/** A metadata value as a group's `match.metadata` compares it: strings as they are, others as JSON. */
function metadataText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v) ?? '';
}
