/**
 * A staged rollout as a timeline: each stage with its selector, its progress toward its gates,
 * and who promoted or halted it and when (the audit); the rollout verbs for an admin token.
 */
import type { RolloutStageView, RolloutView } from '../../rollout/view.ts';
import type { AuditEntry } from '../../store/audit.ts';
import { api, confirmed, h, time } from './dom.ts';

/** What GET /api/v1/rollout answers: the rollout under way, else the last one. */
export interface RolloutAnswer {
  rollout: RolloutView | null;
  last?: RolloutView;
}

function selector(s: RolloutStageView): string {
  if (!s.select) return 'every proxy no earlier stage took';
  const parts = [];
  if (s.select.groups) parts.push(`groups ${s.select.groups.join(', ')}`);
  if (s.select.idPattern) parts.push(`ids ${s.select.idPattern}`);
  if (s.select.locality)
    parts.push(
      `nodes in ${Object.entries(s.select.locality)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
  if (s.select.percent !== undefined) parts.push(`${s.select.percent}% of proxies`);
  return parts.join(' and ') || 'every proxy';
}

function progress(s: RolloutStageView): HTMLElement {
  const share = s.nodes ? Math.round((100 * s.upToDate) / s.nodes) : 0;
  const want = s.gates?.ackedPercent ?? 100;
  return h(
    'div',
    {},
    h('progress', { max: 100, value: share, 'aria-label': `${s.name}: ${share}% ACKed of ${want}% needed` }),
    ` ${s.upToDate} of ${s.nodes} ACKed (${share}%; needs ${want}%`,
    s.gates ? `, at least ${s.gates.minProxies} prox${s.gates.minProxies === 1 ? 'y' : 'ies'}` : '',
    s.gates?.soakMs ? `, soak ${Math.round(s.gates.soakMs / 1000)}s` : '',
    s.gates?.manual ? ', manual approval' : '',
    ')',
    s.soakRemainingMs !== undefined ? ` · soak: ${Math.ceil(s.soakRemainingMs / 1000)}s left` : '',
    s.waitingFor ? ` · waiting for ${s.waitingFor}` : '',
  );
}

function haltedBy(halt: NonNullable<RolloutView['halt']>): string {
  return halt.reason === 'nack'
    ? `by a NACK from ${halt.nodeId ?? 'a proxy'}: ${halt.message ?? ''}`
    : 'by an operator';
}

const VERBS: Record<string, string[]> = {
  progressing: ['promote', 'halt', 'abort'],
  halted: ['resume', 'abort'],
};

export function renderRollout(
  answer: RolloutAnswer,
  audit: AuditEntry[],
  admin: boolean,
  refresh: () => void,
): HTMLElement {
  const r = answer.rollout ?? answer.last;
  if (!r)
    return h(
      'div',
      { id: 'rollout-view' },
      h('p', {}, 'No rollout has run. A Rollout document in the tree stages the next change.'),
    );
  const live = answer.rollout !== null;
  const events = audit.filter((a) => a.action.startsWith('rollout') && a.at >= r.startedAt);
  const verbs = live && admin ? (VERBS[r.status] ?? []) : [];
  const stageIndex = r.stages.findIndex((s) => s.name === r.stage);
  return h(
    'div',
    { id: 'rollout-view' },
    h(
      'p',
      { class: 'headline' },
      `Rollout ${r.id}: version ${r.from} → ${r.to}, ${r.status}`,
      live ? `, at stage ${r.stage} since ` : '',
      live ? time(r.stageSince) : '',
      ' · started ',
      time(r.startedAt),
      ` · on NACK: ${r.onNack} · gates count ${r.counts}`,
    ),
    r.halt
      ? h(
          'p',
          { class: 'problem error' },
          `✗ halted ${haltedBy(r.halt)} `,
          time(r.halt.at),
          r.halt.rolledBack ? ' (the stage went back to the previous version)' : '',
        )
      : '',
    h(
      'ol',
      { class: 'timeline', id: 'stages' },
      ...r.stages.map((s, i) =>
        h(
          'li',
          {
            class: i < stageIndex || s.onNewVersion ? 'done' : i === stageIndex ? 'current' : 'later',
            'data-stage': s.name,
          },
          h('strong', {}, s.name),
          i === stageIndex && live ? ' (current)' : '',
          s.onNewVersion ? ' · on the new version' : ' · on the previous version',
          h('div', { class: 'muted' }, selector(s)),
          progress(s),
        ),
      ),
    ),
    verbs.length
      ? h(
          'div',
          { class: 'actions', id: 'rollout-actions' },
          ...verbs.map((v) =>
            h(
              'button',
              {
                type: 'button',
                'data-verb': v,
                onclick: () => {
                  if (!confirmed(`${v[0]!.toUpperCase()}${v.slice(1)} rollout ${r.id}`)) return;
                  void api(`rollout/${v}`, { method: 'POST', body: {} }).then(refresh, (e: Error) => alert(e.message));
                },
              },
              v,
            ),
          ),
        )
      : h(
          'p',
          { class: 'muted', id: 'rollout-actions' },
          live ? 'An admin token can promote, halt, resume or abort.' : '',
        ),
    h('h3', {}, 'Decisions'),
    events.length
      ? h('ul', { id: 'rollout-events' }, ...events.map((e) => h('li', {}, time(e.at), ` ${e.action} by ${e.actor}`)))
      : h('p', { id: 'rollout-events' }, 'none yet'),
  );
}
