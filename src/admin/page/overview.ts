/** The fleet at a glance: problems first, then each node group with its proxies' states. */
import type { Pin } from '../../store/pins.ts';
import type { FleetSummary, GroupSummary, Problem } from '../fleet-view.ts';
import { NODE_STATES as ORDER, type NodeState } from '../node-state.ts';
import { h, STATE_LABEL, stateBadge, time } from './dom.ts';
import type { RolloutAnswer } from './rollout.ts';

/** What GET /api/v1/fleet answers (admin/server.ts). */
export interface FleetAnswer extends FleetSummary {
  rollout: RolloutAnswer;
  pins: Pin[];
}

/** A bar of the states' shares, with the counts written under it (it reads without colour). */
function stackedBar(states: Record<NodeState, number>, total: number): HTMLElement {
  const bar = h('div', { class: 'bar', role: 'img', 'aria-label': counts(states) });
  for (const s of ORDER)
    if (states[s]) bar.append(h('span', { class: `seg ${s}`, style: `width:${(100 * states[s]) / total}%` }));
  return bar;
}

function counts(states: Record<NodeState, number>): string {
  return ORDER.filter((s) => states[s])
    .map((s) => `${states[s]} ${STATE_LABEL[s].slice(2)}`)
    .join(' · ');
}

const list = (r: Record<string, number>) =>
  Object.entries(r)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

/** `rolling out 5 → 7: 1 proxy on 7, 3 on 5, 1 not in sync` */
function rolloutLine(r: NonNullable<GroupSummary['rollout']>): string {
  const parts = [`${r.onTo} prox${r.onTo === 1 ? 'y' : 'ies'} on ${r.to}`, `${r.onFrom} on ${r.from}`];
  if (r.unsettled) parts.push(`${r.unsettled} not in sync`);
  return `rolling out ${r.from} → ${r.to}: ${parts.join(', ')}`;
}

function groupCard(g: GroupSummary, pinned?: { versionId: number; actor: string }): HTMLElement {
  const link = (state?: NodeState) => `#/nodes?group=${encodeURIComponent(g.group)}${state ? `&state=${state}` : ''}`;
  return h(
    'section',
    { class: 'card', 'data-group': g.group, 'aria-label': `group ${g.group}` },
    h('h3', {}, h('a', { href: link() }, g.group)),
    h(
      'div',
      { class: 'muted' },
      g.rollout ? rolloutLine(g.rollout) : g.versionId !== undefined ? `version ${g.versionId}` : 'no version',
      pinned ? ` · pinned to ${pinned.versionId} by ${pinned.actor}` : '',
      g.since ? ' · applied ' : '',
      g.since ? time(g.since) : '',
    ),
    g.proxies === 0
      ? h('p', { class: 'empty' }, 'no proxy connected')
      : h(
          'div',
          {},
          stackedBar(g.states, g.proxies),
          h(
            'p',
            { class: 'counts' },
            `${g.proxies} prox${g.proxies === 1 ? 'y' : 'ies'}: `,
            ...ORDER.filter((s) => g.states[s]).flatMap((s, i) => [
              i ? ' · ' : '',
              h('a', { href: link(s) }, stateBadge(s, String(g.states[s]))),
            ]),
          ),
          h('p', { class: 'muted' }, `transports: ${list(g.transports)}`),
          h('p', { class: 'muted' }, `clients: ${list(g.clients)}`),
        ),
  );
}

function problemItem(p: Problem): HTMLElement {
  return h(
    'li',
    { class: `problem ${p.severity}`, 'data-kind': p.kind },
    h('strong', {}, p.severity === 'error' ? '✗ ' : '⚠ '),
    p.text,
    p.at ? ' · ' : '',
    p.at ? time(p.at) : '',
  );
}

export function renderOverview(f: FleetAnswer): HTMLElement {
  const r = f.rollout.rollout;
  const pins = new Map(f.pins.map((p) => [p.group, p]));
  return h(
    'div',
    { id: 'overview' },
    h(
      'p',
      { class: 'headline' },
      f.versionId !== undefined ? `Serving version ${f.versionId}, applied ` : 'No version applied yet',
      f.appliedAt ? time(f.appliedAt) : '',
      ` · ${f.totals.proxies} prox${f.totals.proxies === 1 ? 'y' : 'ies'}`,
      f.totals.proxies ? ` (${counts(f.totals.states)})` : '',
      r ? ' · ' : '',
      r ? h('a', { href: '#/rollout' }, `rollout ${r.id} ${r.status} at stage ${r.stage}`) : '',
    ),
    h('h2', {}, 'Problems'),
    f.problems.length
      ? h('ul', { id: 'problems' }, ...f.problems.map(problemItem))
      : h('p', { id: 'problems', class: 'ok' }, '✓ none'),
    h('h2', {}, 'Node groups'),
    h('div', { id: 'groups', class: 'cards' }, ...f.groups.map((g) => groupCard(g, pins.get(g.group)))),
  );
}
