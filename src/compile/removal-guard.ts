/**
 * No tree may empty the fleet by accident. Two rules, both waived only by a `Guard` document in
 * the tree itself (so the waiver is reviewed and pushed like the change it allows):
 *  - a tree that defines nothing to serve (no listener in any node group: every YAML file
 *    deleted, a commit that holds only a README) is refused unless `allowEmpty: true`;
 *  - measured against what is served now (or, for `validate --previous`, another tree), a change
 *    that removes more than `maxRemovalPercent` (default 50) of a node group's listeners and
 *    clusters, and at least two of them, is refused. A node group that disappears loses all.
 * Checked by the apply pipeline, `fleetxds validate` and the git pre-receive hook alike.
 */
import { Codes, type Diagnostic } from '../shared/diagnostics.ts';
import { DiagnosticSink } from '../model/diagnostic-sink.ts';
import { originOf, type Model } from '../model/types.ts';
import { diffTypes, type GroupSnapshot } from '../snapshot/group-snapshot.ts';

export const DEFAULT_MAX_REMOVAL_PERCENT = 50;
/** Smaller removals pass whatever their share (a group of two may lose one). */
const MIN_REMOVED = 2;

const GUARDED = ['listener', 'cluster'] as const;

/**
 * What `after` lacks of `before`'s listeners and clusters. An unchanged type is the same snapshot
 * and costs nothing; a changed one costs its diff, which the streams then reuse for their push.
 */
function removedFrom(before: GroupSnapshot, after: GroupSnapshot | undefined): string[] {
  return GUARDED.flatMap((kind) =>
    after
      ? diffTypes(before.types[kind], after.types[kind]).removed.map((r) => `${kind} ${r.name}`)
      : [...before.types[kind].resources.keys()].map((n) => `${kind} ${n}`),
  );
}

export function removalDiagnostics(
  model: Model,
  next: ReadonlyMap<string, GroupSnapshot>,
  previous: ReadonlyMap<string, GroupSnapshot> | undefined,
  textOf: (file: string) => string | undefined,
): Diagnostic[] {
  const sink = new DiagnosticSink(textOf);
  const guard = model.guards?.[0];
  const origin = guard && originOf(guard);
  const at = origin ? { origin, kind: 'Guard', name: guard.name } : undefined;
  const how = 'if that is what you mean, add a document `kind: Guard` to the tree for this change';
  const listeners = [...next.values()].reduce((a, g) => a + g.types.listener.resources.size, 0);
  if (listeners === 0 && !guard?.allowEmpty) {
    sink.error(
      Codes.EMPTY_TREE,
      at,
      [],
      'the tree defines nothing to serve (no Listener or GrpcService in any node group): applying it would ' +
        `remove every listener from every proxy; ${how} with \`allowEmpty: true\``,
    );
  }
  if (!previous || listeners === 0) return sink.diagnostics; // emptiness is the rule above
  const maxPercent = guard?.maxRemovalPercent ?? DEFAULT_MAX_REMOVAL_PERCENT;
  for (const [group, before] of previous) {
    const had = before.types.listener.resources.size + before.types.cluster.resources.size;
    const removed = removedFrom(before, next.get(group));
    if (removed.length < MIN_REMOVED || removed.length * 100 <= maxPercent * had) continue;
    const pct = Math.round((removed.length * 100) / had);
    const list = removed.slice(0, 8).join(', ') + (removed.length > 8 ? `, and ${removed.length - 8} more` : '');
    sink.error(
      Codes.MASS_REMOVAL,
      at,
      [],
      `node group "${group}" would lose ${removed.length} of its ${had} listeners and clusters` +
        ` at once (${pct}%, over the ${maxPercent}% one change may remove): ${list}; ` +
        `${how} with \`maxRemovalPercent: ${Math.min(100, pct)}\`, and remove it afterwards; if this is another ` +
        'tree than the one served (a server pointed at a new directory), give it a database of its own (`database` ' +
        'in the settings, or FLEETXDS_DATABASE): a new database starts from the tree it is given',
    );
  }
  return sink.diagnostics;
}
