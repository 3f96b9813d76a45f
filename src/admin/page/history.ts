/**
 * History: the versions with who, what and when; for any two, the Envoy resources that differ per
 * node group, each with its line diff; rollback and pin for an admin token.
 */
import type { Pin } from '../../store/pins.ts';
import type { GroupChanges, VersionRecord } from '../../store/revisions.ts';
import { api, confirmed, h, time } from './dom.ts';
import { lineDiff } from './line-diff.ts';

export interface VersionsAnswer {
  current?: number;
  pins: Pin[];
  versions: (VersionRecord & { changes?: Record<string, GroupChanges> })[];
}

function who(v: VersionRecord): string {
  const by = [v.author, v.subject].filter(Boolean).join(': ');
  return `${v.sourceKind}${v.commitSha ? ` ${v.commitSha.slice(0, 12)}` : ''}${by ? ` · ${by}` : ''}`;
}

function changeCount(c: Record<string, GroupChanges> | undefined): string {
  if (!c) return '';
  const n = Object.values(c).reduce((s, g) => s + g.added.length + g.changed.length + g.removed.length, 0);
  const groups = Object.keys(c).length;
  return `${n} resource${n === 1 ? '' : 's'} in ${groups} group${groups === 1 ? '' : 's'}`;
}

export function renderHistory(
  answer: VersionsAnswer,
  groups: string[],
  admin: boolean,
  pick: { a?: number; b?: number },
  go: (pick: { a?: number; b?: number }) => void,
  refresh: () => void,
): HTMLElement {
  const radio = (side: 'a' | 'b', id: number) => {
    const r = h('input', {
      type: 'radio',
      name: side,
      value: id,
      'aria-label': `${side === 'a' ? 'from' : 'to'} version ${id}`,
      onchange: () => go({ ...pick, [side]: id }),
    });
    if (pick[side] === id) r.checked = true;
    return r;
  };
  const decide = (what: string, path: string, method: string, body: object) => {
    if (!confirmed(what)) return;
    void api(path, { method, body }).then(refresh, (e: Error) => alert(e.message));
  };
  const actions = (v: VersionRecord) =>
    admin && v.id !== answer.current
      ? h(
          'span',
          {},
          h(
            'button',
            {
              type: 'button',
              'data-action': 'rollback',
              onclick: () =>
                decide(`Roll every group back to version ${v.id}`, 'rollback', 'POST', { versionId: v.id }),
            },
            'roll back here',
          ),
          ' ',
          ...groups.map((g) =>
            h(
              'button',
              {
                type: 'button',
                'data-action': 'pin',
                onclick: () =>
                  decide(`Pin group ${g} to version ${v.id}`, `pins/${encodeURIComponent(g)}`, 'PUT', {
                    versionId: v.id,
                  }),
              },
              `pin ${g}`,
            ),
          ),
        )
      : '';
  const rows = answer.versions.map((v) =>
    h(
      'tr',
      { 'data-version': v.id },
      h('td', {}, radio('a', v.id), ' ', radio('b', v.id)),
      h('td', {}, String(v.id), v.id === answer.current ? ' (served)' : ''),
      h('td', {}, time(v.appliedAt)),
      h('td', {}, who(v)),
      h('td', {}, changeCount(v.changes)),
      h('td', {}, actions(v)),
    ),
  );
  return h(
    'div',
    { id: 'history-view' },
    h(
      'p',
      { class: 'muted' },
      'Choose a version in each column (from, to) to see what the proxies are served differently.',
    ),
    h(
      'table',
      { id: 'history' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['from / to', 'version', 'applied', 'source', 'changed', ''].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h('tbody', {}, ...rows),
    ),
    h('div', { id: 'diff' }),
  );
}

/** The resources that differ between two versions, per group; each opens its line diff. */
export async function renderDiff(a: number, b: number): Promise<HTMLElement> {
  const changes = await api<Record<string, GroupChanges>>(`versions/${a}/diff/${b}`);
  const out = h('div', {}, h('h3', {}, `Version ${a} → ${b}: Envoy resources per node group`));
  const groups = Object.entries(changes);
  if (!groups.length) out.append(h('p', {}, 'The two versions serve the same resources.'));
  for (const [group, c] of groups) {
    const list = h('ul', { 'data-group': group });
    const item = (op: string, label: string) => {
      const [kind, ...rest] = label.split('/');
      const name = rest.join('/');
      const mark = op === 'added' ? '+' : op === 'removed' ? '−' : '~';
      const li = h('li', { class: `change ${op}` }, `${mark} ${label} `);
      if (kind !== 'secret') {
        const show = h('button', { type: 'button', class: 'link' }, 'show');
        show.addEventListener('click', () => {
          void resourceDiff(a, b, group, kind!, name).then(
            (d) => li.append(d),
            (e: Error) => li.append(` ${e.message}`),
          );
          show.remove();
        });
        li.append(show);
      }
      return li;
    };
    for (const n of c.changed) list.append(item('changed', n));
    for (const n of c.added) list.append(item('added', n));
    for (const n of c.removed) list.append(item('removed', n));
    out.append(h('h4', {}, `group ${group}`), list);
  }
  return out;
}

async function resourceDiff(a: number, b: number, group: string, kind: string, name: string): Promise<HTMLElement> {
  const r = await api<{ before: object | null; after: object | null }>(
    `versions/${a}/diff/${b}/resources/${encodeURIComponent(group)}/${kind}/${encodeURIComponent(name)}`,
  );
  const text = (x: object | null) => (x ? JSON.stringify(x, null, 2) : '');
  const { lines, cut } = lineDiff(text(r.before), text(r.after));
  const pre = h('pre', { class: 'diff' });
  for (const l of lines)
    pre.append(h('span', { class: l.op === '+' ? 'add' : l.op === '-' ? 'del' : '' }, `${l.op} ${l.text}\n`));
  return h('div', {}, pre, cut ? h('p', { class: 'muted' }, 'Long resource: only its first lines are compared.') : '');
}
