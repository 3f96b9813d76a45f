/**
 * What a REST poll is answered with: the selection of a type snapshot it asks for (all of a
 * wildcard type, else the names it polls), as one JSON body encoded once per version and shared by
 * every poll that asks the same.
 */
import { shortHash } from '../../shared/hash.ts';
import { retargetConfigSources, type ConfigSourceVariant } from '../../snapshot/config-sources.ts';
import { deriveWithin } from '../../snapshot/derived.ts';
import type { TypeSnapshot } from '../../snapshot/group-snapshot.ts';
import { ResourceTypes, TypeUrls, type ResourceKind } from '../../xds/resource-types.ts';

export interface Selection {
  version: string;
  /** The JSON response, encoded once: thousands of released polls share these bytes. */
  body: Buffer;
}

/**
 * Selection bodies kept per type snapshot, computed once per version and shared by every poll. A
 * selection is keyed by what the client sends (names, its xDS cluster), so what is kept is bounded
 * in count and in bytes: a body past the bound is made for its poll and not held.
 */
const MAX_SELECTIONS = 10_000;

export function selectionKey(kind: ResourceKind, names: readonly string[]): string {
  return ResourceTypes[kind].wildcard ? '*' : [...new Set(names)].sort().join('\u0000');
}

export function restSelection(
  t: TypeSnapshot,
  names: readonly string[],
  variant: ConfigSourceVariant,
  maxCachedBytes: number,
): Selection {
  const key = selectionKey(t.kind, names);
  return deriveWithin(
    t,
    'rest-selection',
    `${variant.key}\u0001${key}`,
    makeSelection,
    { key, variant },
    {
      entries: MAX_SELECTIONS,
      bytes: maxCachedBytes,
      weigh: (s) => s.body.length + key.length,
    },
  );
}

function makeSelection(t: TypeSnapshot, { key, variant }: { key: string; variant: ConfigSourceVariant }): Selection {
  const full = ResourceTypes[t.kind].wildcard;
  const picked = full ? t.wildcard : key.split('\u0000').flatMap((n) => t.resources.get(n) ?? []);
  // Full-state types carry the type version; a named selection gets a version of its own, so a
  // change to some other cluster's endpoints does not wake this poller.
  const version = full ? t.version : shortHash(picked.map((r) => `${r.name}\u0000${r.version}`).join('\n'));
  const resources = picked.map((r) => ({
    '@type': TypeUrls[t.kind],
    ...retargetConfigSources(r.json, variant.sourceFor),
  }));
  const body = Buffer.from(JSON.stringify({ version_info: version, resources, type_url: TypeUrls[t.kind] }));
  return { version, body };
}
