/**
 * The fleet at a glance (`GET /api/v1/fleet`) and the node list filtered and paged on the server
 * (`GET /api/v1/fleet/nodes`): what the status page asks for instead of every node's every type,
 * so that it stays usable with thousands of proxies. Pure: the admin server gathers the facts.
 *
 * A node's state is the worst of the types it subscribes to: NACKed when it refused the version
 * it should hold, behind when it has not ACKed that version yet, in sync otherwise. The version it
 * should hold is its group's, or during a staged rollout its stage's.
 */
import { refusalSummary, type Diagnostic } from '../shared/diagnostics.ts';
import type { StreamStatus } from '../status/node-registry.ts';
import { kindOfTypeUrl, type ResourceKind } from '../xds/resource-types.ts';
import { NODE_STATES, type NodeState } from './node-state.ts';

export { NODE_STATES, type NodeState };

/** One proxy as the node list shows it. */
export interface NodeRow {
  nodeId: string;
  group: string;
  stage?: string;
  replica?: string;
  transport: string;
  /** The client and its version, as the node reports them (`envoy/1.40.0`, `grpc-node-js/1.12.0`). */
  client: string;
  connectedAt: string;
  state: NodeState;
  /** Behind: since when the oldest version it has not ACKed was sent (or it connected). */
  behindSince?: string;
  /** NACKed: the newest refusal, in the client's words. */
  nack?: { typeUrl: string; version: string; message: string; at: string };
  /** The config version it is served (its group's pin or rollout stage decides); absent without a config. */
  versionId?: number;
  /** The client certificate of an mTLS connection: its names, and when it expires. */
  certificate?: string;
  certificateNotAfter?: string;
}

/** The version of each type a node should hold (a group snapshot is one). */
export interface ServedVersions {
  readonly types: { readonly [K in ResourceKind]: { readonly version: string } };
}

/** A node of this replica or of a peer, with what it should be served. */
export interface NodeFacts {
  status: StreamStatus & { replica?: string };
  /** Its group's snapshot, or its stage's during a rollout; undefined for a group the config lacks. */
  served: ServedVersions | undefined;
  /** The config version that snapshot is from. */
  versionId?: number;
}

/** Who a node is and where it is served: what every list of nodes starts with. */
export function whereNodeIs(s: StreamStatus & { replica?: string }) {
  return {
    nodeId: s.nodeId,
    group: s.group,
    ...(s.stage ? { stage: s.stage } : {}),
    ...(s.replica ? { replica: s.replica } : {}),
    transport: s.transport,
  };
}

export function nodeRow({ status: s, served, versionId }: NodeFacts): NodeRow {
  let state: NodeState = 'in-sync';
  let behindSince: string | undefined;
  let nack: NodeRow['nack'];
  for (const [typeUrl, t] of Object.entries(s.types)) {
    const kind = kindOfTypeUrl(typeUrl);
    const want = kind && served?.types[kind].version;
    if (!want) continue;
    if (t.lastNack?.version === want) {
      state = 'nacked';
      if (!nack || t.lastNack.at > nack.at)
        nack = { typeUrl, version: t.lastNack.version, message: t.lastNack.message, at: t.lastNack.at };
    } else if (t.ackedVersion !== want) {
      if (state === 'in-sync') state = 'behind';
      const since = (t.sentVersion === want ? t.sentAt : undefined) ?? s.behindSince ?? s.connectedAt;
      if (!behindSince || since < behindSince) behindSince = since;
    }
  }
  return {
    ...whereNodeIs(s),
    client: s.userAgent || 'unknown',
    connectedAt: s.connectedAt,
    state,
    ...(state === 'behind' && behindSince ? { behindSince } : {}),
    ...(nack ? { nack } : {}),
    ...(versionId !== undefined ? { versionId } : {}),
    ...(s.clientCertificate
      ? { certificate: s.clientCertificate.names, certificateNotAfter: s.clientCertificate.notAfter }
      : {}),
  };
}

/** One node group at a glance. */
export interface GroupSummary {
  group: string;
  /** The config version its proxies are served, and since when that version is served. */
  versionId?: number;
  since?: string;
  /**
   * During a staged rollout: from which version to which, and how many proxies hold each (served
   * it and ACKed it); the others are not in sync (sent a version they have not ACKed, or refused one).
   */
  rollout?: { from: number; to: number; onFrom: number; onTo: number; unsettled: number };
  proxies: number;
  states: Record<NodeState, number>;
  transports: Record<string, number>;
  clients: Record<string, number>;
}

export interface ProblemFacts {
  /** The refusal of the tree on disk now (none once the directory holds a valid tree again). */
  rejection?: {
    rejectedAt: string;
    source: string;
    diagnostics: readonly Pick<Diagnostic, 'severity' | 'message' | 'location'>[];
  };
  rollout?: { id: number; status: string; stage: string; halt?: { reason: string; at: string; message?: string } };
  unreadableTree?: { since: string; reason: string };
  fileFailures: { group: string; error: string; at: string }[];
  certificates: { listener: string; subject: string; notAfter: string }[];
  replicasBehind?: number | null;
  now: number;
}

export type ProblemKind =
  | 'nack'
  | 'rejected-tree'
  | 'rollout-halted'
  | 'unreadable-tree'
  | 'file-failure'
  | 'certificate-expiring'
  | 'replica-behind';

export interface Problem {
  kind: ProblemKind;
  severity: 'error' | 'warning';
  /** A sentence for people. */
  text: string;
  group?: string;
  at?: string;
}

/** Certificates that expire within this are a problem (error within a day). */
const EXPIRY_WARNING_MS = 14 * 24 * 3600_000;
const DAY_MS = 24 * 3600_000;
const expiresSoon = (notAfter: string, now: number) => Date.parse(notAfter) - now <= EXPIRY_WARNING_MS;
const expirySeverity = (notAfter: string, now: number): Problem['severity'] =>
  Date.parse(notAfter) - now < DAY_MS ? 'error' : 'warning';

export interface FleetSummary {
  versionId?: number;
  appliedAt?: string;
  groups: GroupSummary[];
  problems: Problem[];
  totals: { proxies: number; states: Record<NodeState, number> };
}

const zeroStates = (): Record<NodeState, number> => ({ nacked: 0, behind: 0, 'in-sync': 0 });
const bump = (r: Record<string, number>, k: string) => void (r[k] = (r[k] ?? 0) + 1);

/**
 * Per group (every group of the config, proxies or not; groups only proxies name, such as a group
 * a newer config removed, too), and the problems, worst first.
 */
export function fleetSummary(
  config:
    | {
        versionId: number;
        appliedAt: string;
        groups: Iterable<string>;
        staged?: { from: number; to: number; groups: ReadonlySet<string> };
      }
    | undefined,
  rows: readonly NodeRow[],
  facts: ProblemFacts,
): FleetSummary {
  const groups = new Map<string, GroupSummary>();
  const group = (name: string) => {
    let g = groups.get(name);
    if (!g) {
      g = { group: name, proxies: 0, states: zeroStates(), transports: {}, clients: {} };
      if (config) Object.assign(g, { versionId: config.versionId, since: config.appliedAt });
      const staged = config?.staged;
      if (staged?.groups.has(name)) g.rollout = { from: staged.from, to: staged.to, onFrom: 0, onTo: 0, unsettled: 0 };
      groups.set(name, g);
    }
    return g;
  };
  for (const name of config?.groups ?? []) group(name);
  const totals = { proxies: rows.length, states: zeroStates() };
  for (const r of rows) {
    const g = group(r.group);
    g.proxies++;
    g.states[r.state]++;
    totals.states[r.state]++;
    bump(g.transports, r.transport);
    bump(g.clients, r.client);
    if (g.rollout) {
      if (r.state === 'in-sync' && r.versionId === g.rollout.to) g.rollout.onTo++;
      else if (r.state === 'in-sync' && r.versionId === g.rollout.from) g.rollout.onFrom++;
      else g.rollout.unsettled++;
    }
  }
  return {
    ...(config ? { versionId: config.versionId, appliedAt: config.appliedAt } : {}),
    groups: [...groups.values()].sort((a, b) => a.group.localeCompare(b.group)),
    problems: problems(rows, facts),
    totals,
  };
}

function problems(rows: readonly NodeRow[], f: ProblemFacts): Problem[] {
  const out: Problem[] = [];
  if (f.unreadableTree)
    out.push({
      kind: 'unreadable-tree',
      severity: 'error',
      text: `the config tree cannot be read: ${f.unreadableTree.reason}`,
      at: f.unreadableTree.since,
    });
  if (f.rejection)
    out.push({
      kind: 'rejected-tree',
      severity: 'error',
      text: `the newest tree (${f.rejection.source}) was refused: ${refusalSummary(f.rejection.diagnostics)}`,
      at: f.rejection.rejectedAt,
    });
  if (f.rollout?.status === 'halted')
    out.push({
      kind: 'rollout-halted',
      severity: 'error',
      text: `rollout ${f.rollout.id} is halted at stage ${f.rollout.stage}${
        f.rollout.halt?.reason === 'nack' ? `: a proxy refused the new version (${f.rollout.halt.message ?? ''})` : ''
      }`,
      at: f.rollout.halt?.at,
    });
  const nacked = new Map<string, NodeRow[]>();
  for (const r of rows) {
    if (r.state !== 'nacked') continue;
    const list = nacked.get(r.group);
    if (list) list.push(r);
    else nacked.set(r.group, [r]);
  }
  for (const [group, list] of nacked) {
    const newest = list.reduce((a, b) => ((a.nack?.at ?? '') >= (b.nack?.at ?? '') ? a : b));
    out.push({
      kind: 'nack',
      severity: 'error',
      group,
      text: `${list.length} prox${list.length === 1 ? 'y' : 'ies'} of ${group} refused their config; newest: ${
        newest.nodeId
      }: ${newest.nack?.message ?? ''}`,
      at: newest.nack?.at,
    });
  }
  for (const ff of f.fileFailures)
    out.push({
      kind: 'file-failure',
      severity: 'error',
      group: ff.group,
      text: `rendered files of ${ff.group} could not be written: ${ff.error}`,
      at: ff.at,
    });
  if (f.replicasBehind === null || (f.replicasBehind ?? 0) > 0)
    out.push({
      kind: 'replica-behind',
      severity: f.replicasBehind === null ? 'error' : 'warning',
      text:
        f.replicasBehind === null
          ? 'the shared decision store cannot be read: this replica may be behind the others'
          : `this replica has ${f.replicasBehind} shared decision(s) not applied yet`,
    });
  const expiring = rows
    .filter((r) => r.certificateNotAfter && expiresSoon(r.certificateNotAfter, f.now))
    .sort((a, b) => (a.certificateNotAfter! < b.certificateNotAfter! ? -1 : 1));
  if (expiring.length) {
    const first = expiring[0]!;
    out.push({
      kind: 'certificate-expiring',
      severity: expirySeverity(first.certificateNotAfter!, f.now),
      text: `the client certificate${expiring.length === 1 ? '' : 's'} of ${expiring.length} prox${
        expiring.length === 1 ? 'y' : 'ies'
      } expire${expiring.length === 1 ? 's' : ''} within 14 days; first: ${first.nodeId} (${first.certificate}) at ${
        first.certificateNotAfter
      }`,
      at: first.certificateNotAfter,
    });
  }
  for (const c of f.certificates) {
    if (!expiresSoon(c.notAfter, f.now)) continue;
    const expired = Date.parse(c.notAfter) <= f.now;
    out.push({
      kind: 'certificate-expiring',
      severity: expirySeverity(c.notAfter, f.now),
      text: `the certificate of listener ${c.listener} (${c.subject}) ${expired ? 'expired' : 'expires'} ${c.notAfter}`,
      at: c.notAfter,
    });
  }
  // Errors first; within a severity, the order above (what blocks every proxy before what blocks some).
  return [...out.filter((p) => p.severity === 'error'), ...out.filter((p) => p.severity === 'warning')];
}

/** What the node list can be narrowed to; every field optional. */
export interface NodeFilter {
  /** Part of the node id, any case: a plain substring, never a pattern. */
  q?: string;
  group?: string;
  state?: NodeState;
  transport?: string;
  client?: string;
  versionId?: number;
}

/** Longest search text taken: a longer one narrows nothing more and costs every comparison. */
export const MAX_QUERY = 200;
export const MAX_PAGE = 500;
/** Node ids in the order people read them: edge-2 before edge-10. */
const BY_ID = new Intl.Collator('en', { numeric: true });
const DEFAULT_PAGE = 50;

export interface NodePage {
  nodes: NodeRow[];
  /** Nodes matching the filter, of `all`. */
  total: number;
  all: number;
  offset: number;
  limit: number;
  /** The values each filter can take in the whole list, with their counts (for the filter menus). */
  facets: {
    group: Record<string, number>;
    transport: Record<string, number>;
    client: Record<string, number>;
    version: Record<string, number>;
  };
}

/**
 * The filtered page, problems first: NACKed, then behind (longest first), then in sync, each by
 * node id (numbers in ids by value). `offset` and `limit` are clamped (limit 1..MAX_PAGE; not a number: DEFAULT_PAGE).
 */
export function nodePage(rows: readonly NodeRow[], filter: NodeFilter, offset: number, limit: number): NodePage {
  const q = filter.q?.slice(0, MAX_QUERY).toLowerCase();
  const matching = rows.filter(
    (r) =>
      (!q || r.nodeId.toLowerCase().includes(q)) &&
      (!filter.group || r.group === filter.group) &&
      (!filter.state || r.state === filter.state) &&
      (!filter.transport || r.transport === filter.transport) &&
      (!filter.client || r.client === filter.client) &&
      (filter.versionId === undefined || r.versionId === filter.versionId),
  );
  const rank = (r: NodeRow) => NODE_STATES.indexOf(r.state);
  matching.sort(
    (a, b) =>
      rank(a) - rank(b) ||
      (a.behindSince ?? '').localeCompare(b.behindSince ?? '') ||
      BY_ID.compare(a.nodeId, b.nodeId),
  );
  const facets: NodePage['facets'] = { group: {}, transport: {}, client: {}, version: {} };
  for (const r of rows) {
    bump(facets.group, r.group);
    bump(facets.transport, r.transport);
    bump(facets.client, r.client);
    if (r.versionId !== undefined) bump(facets.version, String(r.versionId));
  }
  const lim = Math.min(Math.max(1, Number.isFinite(limit) ? Math.trunc(limit) : DEFAULT_PAGE), MAX_PAGE);
  const off = Math.max(0, Number.isFinite(offset) ? Math.trunc(offset) : 0);
  return {
    nodes: matching.slice(off, off + lim),
    total: matching.length,
    all: rows.length,
    offset: off,
    limit: lim,
    facets,
  };
}
