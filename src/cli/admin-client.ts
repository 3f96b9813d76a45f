/**
 * Apply now, history, diff, rollback and pins from the command line: thin calls to the running server's
 * admin API (the server is what serves, so it is the one that must switch).
 */
import { loadServerConfig, splitListen, type ServerConfig } from '../config/server-config.ts';
import type { ApplyResult } from '../admin/control.ts';
import type { NodeExplanation } from '../admin/explain.ts';
import { formatDiagnostic } from '../shared/diagnostics.ts';
import type { DecisionResult } from '../decision-log/decision.ts';
import type { RolloutView } from '../rollout/view.ts';
import type { GroupChanges } from '../store/revisions.ts';
import { lineDiff, MAX_LINES } from '../admin/page/line-diff.ts';

interface VersionRow {
  id: number;
  appliedAt: string;
  sourceKind: string;
  commitSha?: string | null;
  author?: string | null;
  subject?: string | null;
  changes?: Record<string, { added: string[]; changed: string[]; removed: string[] }>;
}

/**
 * The running server's admin API as its settings name it (a wildcard listen is reached on
 * loopback), and the headers that carry FLEETXDS_TOKEN, the bearer token when the API requires one.
 */
export function adminApi(settings: ServerConfig): { base: string; headers: () => Record<string, string> } {
  const { host, port } = splitListen(settings.admin.listen);
  const reach = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const token = process.env.FLEETXDS_TOKEN;
  const headers = (): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});
  return { base: `http://${reach}:${port}`, headers };
}

/** Unchanged lines shown around each change of a resource. */
const CONTEXT = 3;

/**
 * `fleetxds diff A B`: per group, the resources added, removed and changed, each changed one as a
 * line diff of its JSON (secrets by name only: their bytes are never shown).
 */
export async function diffText(
  a: number,
  b: number,
  groups: Record<string, GroupChanges>,
  resource: (group: string, kindAndName: string) => Promise<{ before: object | null; after: object | null }>,
): Promise<string> {
  const names = Object.keys(groups);
  if (!names.length) return `versions ${a} and ${b} serve the same resources\n`;
  let out = '';
  for (const group of names) {
    const c = groups[group]!;
    out += `group ${group}:\n`;
    for (const n of c.added) out += `  + ${n}\n`;
    for (const n of c.removed) out += `  - ${n}\n`;
    for (const n of c.changed) {
      out += `  ~ ${n}\n`;
      if (n.startsWith('secret/')) continue;
      const r = await resource(group, n);
      const text = (o: object | null) => (o ? JSON.stringify(o, null, 2) : '');
      const { lines, cut } = lineDiff(text(r.before), text(r.after));
      const near = lines.map((_, i) =>
        lines.slice(Math.max(0, i - CONTEXT), i + CONTEXT + 1).some((l) => l.op !== ' '),
      );
      out += `    --- version ${a}\n    +++ version ${b}\n`;
      let skipped = false;
      lines.forEach((l, i) => {
        if (!near[i]) return void (skipped = true);
        if (skipped) out += '    ...\n';
        skipped = false;
        out += `    ${l.op} ${l.text}\n`;
      });
      if (cut) out += `    (only the first ${MAX_LINES} lines of each side are compared)\n`;
    }
  }
  return out;
}

/** A decision's outcome as a sentence: `what` is done, or why not. */
export function decisionLine(what: string, r: DecisionResult): string {
  if (r.status === 'applied') return `${what}${r.versionId !== undefined ? ` (serving version ${r.versionId})` : ''}`;
  if (r.status === 'skipped') return `nothing to do: ${r.reason}`;
  if (r.status === 'missing') return `not done: ${r.reason}`;
  return `recorded, not yet applied here: ${r.reason}`;
}

/** `fleetxds explain`: the node, then one line per type with its state and why. */
export function explanationLines(e: NodeExplanation): string {
  const how = `${e.connected ? 'connected' : 'disconnected'} (${e.transports.join(', ')})`;
  let out = `node ${e.nodeId}: group ${e.group}, ${how}\n`;
  for (const t of e.types) {
    out += `  ${t.type.padEnd(9)} ${t.state.padEnd(15)} ${t.summary}\n`;
  }
  return out;
}

/** A rollout as `fleetxds rollout status` prints it. */
export function rolloutLines(v: RolloutView | null | undefined): string {
  if (!v) return 'no rollout\n';
  let out = `rollout #${v.id}: ${v.status}, version ${v.from} -> ${v.to}, stage ${v.stage} (on NACK: ${v.onNack})\n`;
  if (v.halt) out += `halted (${v.halt.reason}): ${v.halt.nodeId ?? ''} ${v.halt.message ?? ''}\n`;
  for (const s of v.stages) out += `  ${s.summary}\n`;
  return out;
}

interface OverrideRow {
  what: string;
  started: string;
  deadline: string;
  expired: boolean;
}

/** One line per override, soonest deadline first: when it lapses (or lapsed), and what it is. */
export function overrideLines(rows: readonly OverrideRow[], now: number): string {
  if (!rows.length) return 'no expiring overrides\n';
  const left = (ms: number) =>
    ms >= 3_600_000
      ? `${Math.round(ms / 360_000) / 10}h`
      : ms >= 60_000
        ? `${Math.round(ms / 60_000)}m`
        : `${Math.ceil(ms / 1000)}s`;
  return rows
    .map((r) => {
      const ms = Date.parse(r.deadline) - now;
      const when = r.expired ? 'expired (remove it from the tree)' : ms > 0 ? `in ${left(ms)}` : 'due now';
      return `${r.deadline}  ${when.padEnd(12)}  ${r.what}\n`;
    })
    .join('');
}

/** What an apply did: the tree's diagnostics at their file:line, then the outcome. */
export function applyLines(r: ApplyResult): string {
  const what =
    r.status === 'applied'
      ? `applied: version ${r.versionId}`
      : r.status === 'unchanged'
        ? `unchanged: version ${r.versionId} is this tree`
        : `${r.status}: the served version stays`;
  return `${r.diagnostics.map((d) => `${formatDiagnostic(d)}\n`).join('')}${what}\n`;
}

export async function adminCommand(
  command: string,
  args: string[],
  configFile: string,
  options: { type?: string; json?: boolean } = {},
): Promise<number> {
  const api = adminApi(loadServerConfig(configFile));
  const actor = `${process.env.SUDO_USER ?? process.env.USER ?? 'cli'}@cli`;
  const call = async (method: string, path: string, body?: object) => {
    const headers = { ...api.headers(), ...(body && { 'content-type': 'application/json' }) };
    const res = await fetch(api.base + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const json = (await res.json()) as Record<string, unknown>;
    if (!res.ok) throw new Error(typeof json.error === 'string' ? json.error : `HTTP ${res.status}`);
    return json;
  };
  try {
    switch (command) {
      case 'history': {
        const h = (await call('GET', '/api/v1/versions')) as { current: number; versions: VersionRow[] };
        for (const v of h.versions) {
          const changes = v.changes
            ? Object.entries(v.changes as Record<string, { added: string[]; changed: string[]; removed: string[] }>)
                .map(([g, c]) => `${g}: +${c.added.length} ~${c.changed.length} -${c.removed.length}`)
                .join('; ')
            : '';
          process.stdout.write(
            `${v.id === h.current ? '*' : ' '} #${v.id}  ${v.appliedAt}  ${v.sourceKind.padEnd(9)} ` +
              `${(v.commitSha ?? '').slice(0, 12).padEnd(12)} ${v.author ?? ''}  ${v.subject ?? ''}  ${changes}\n`,
          );
        }
        return 0;
      }
      case 'diff': {
        if (args.length !== 2) return 2;
        const [a, b] = args.map(Number) as [number, number];
        const groups = (await call('GET', `/api/v1/versions/${a}/diff/${b}`)) as Record<string, GroupChanges>;
        if (options.json) {
          process.stdout.write(`${JSON.stringify(groups, null, 2)}\n`);
          return 0;
        }
        const resource = (group: string, kindAndName: string) => {
          const [kind, ...name] = kindAndName.split('/');
          return call(
            'GET',
            `/api/v1/versions/${a}/diff/${b}/resources/${encodeURIComponent(group)}/${kind}/` +
              encodeURIComponent(name.join('/')),
          ) as Promise<{ before: object | null; after: object | null }>;
        };
        process.stdout.write(await diffText(a, b, groups, resource));
        return 0;
      }
      case 'apply': {
        if (args.length) return 2;
        const r = (await call('POST', '/api/v1/apply', { actor })) as unknown as ApplyResult;
        process.stdout.write(applyLines(r));
        return r.status === 'applied' || r.status === 'unchanged' ? 0 : 1;
      }
      case 'rollback': {
        if (args.length !== 1) return 2;
        const r = await call('POST', '/api/v1/rollback', { versionId: Number(args[0]), actor });
        process.stdout.write(`${decisionLine(`rolled back to version ${args[0]}`, r as DecisionResult)}\n`);
        return 0;
      }
      case 'pin': {
        if (args.length !== 2) return 2;
        const r = await call('PUT', `/api/v1/pins/${encodeURIComponent(args[0] ?? '')}`, {
          versionId: Number(args[1]),
          actor,
        });
        process.stdout.write(
          `${decisionLine(`pinned ${args[0]} to version ${args[1]}`, r.result as DecisionResult)}\n`,
        );
        return 0;
      }
      case 'rollout': {
        const [sub, ...more] = args;
        if (more.length) return 2;
        if (sub === 'status' || sub === undefined) {
          const r = (await call('GET', '/api/v1/rollout')) as { rollout: RolloutView | null; last?: RolloutView };
          process.stdout.write(rolloutLines(r.rollout ?? r.last));
          return 0;
        }
        if (!['promote', 'halt', 'resume', 'abort'].includes(sub)) return 2;
        const r = (await call('POST', `/api/v1/rollout/${sub}`, { actor })) as { rollout: RolloutView | null };
        process.stdout.write(`${sub}: done\n${rolloutLines(r.rollout)}`);
        return 0;
      }
      case 'overrides': {
        if (args.length) return 2;
        const o = (await call('GET', '/api/v1/overrides')) as { overrides: OverrideRow[] };
        process.stdout.write(options.json ? `${JSON.stringify(o, null, 2)}\n` : overrideLines(o.overrides, Date.now()));
        return 0;
      }
      case 'explain': {
        if (args.length !== 1) return 2;
        const q = options.type ? `?type=${encodeURIComponent(options.type)}` : '';
        const e = await call('GET', `/api/v1/nodes/${encodeURIComponent(args[0]!)}/explain${q}`);
        process.stdout.write(
          options.json ? `${JSON.stringify(e, null, 2)}\n` : explanationLines(e as unknown as NodeExplanation),
        );
        return 0;
      }
      case 'unpin': {
        if (args.length !== 1) return 2;
        const r = await call('DELETE', `/api/v1/pins/${encodeURIComponent(args[0] ?? '')}`);
        process.stdout.write(`${decisionLine(`unpinned ${args[0]}`, r.result as DecisionResult)}\n`);
        return 0;
      }
    }
  } catch (err) {
    process.stderr.write(`fleetxds ${command}: ${(err as Error).message}\n`);
    return 1;
  }
  return 2;
}
