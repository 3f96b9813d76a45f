/**
 * The node list, searched, filtered and paged by the server (it never sends every node), and a
 * node's own page: what it is served and why, its NACK history and its client certificate.
 */
import type { NodeExplanation } from '../explain.ts';
import type { NodePage, NodeRow } from '../fleet-view.ts';
import { NODE_STATES } from '../node-state.ts';
import { ago, api, h, stateBadge, time } from './dom.ts';

export const PAGE_SIZE = 50;

/** The filter and page, as the address carries them (`#/nodes?group=edge&state=behind&offset=50`). */
export interface NodeQuery {
  q: string;
  group: string;
  state: string;
  transport: string;
  client: string;
  version: string;
  offset: number;
}

export function queryOf(params: URLSearchParams): NodeQuery {
  return {
    q: params.get('q') ?? '',
    group: params.get('group') ?? '',
    state: params.get('state') ?? '',
    transport: params.get('transport') ?? '',
    client: params.get('client') ?? '',
    version: params.get('version') ?? '',
    offset: Math.max(0, Number(params.get('offset') ?? 0) || 0),
  };
}

function search(q: NodeQuery): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== '' && v !== 0) p.set(k, String(v));
  return p.toString();
}

export async function fetchNodes(q: NodeQuery): Promise<NodePage> {
  const p = new URLSearchParams(search(q));
  p.set('limit', String(PAGE_SIZE));
  return api<NodePage>(`fleet/nodes?${p.toString()}`);
}

function badge(n: NodeRow): HTMLElement {
  if (n.state === 'behind') return stateBadge('behind', n.behindSince ? ago(n.behindSince).replace(' ago', '') : '');
  if (n.state === 'nacked')
    return h(
      'span',
      { class: 'badge nacked', title: n.nack?.message ?? '' },
      `✗ NACKed${n.nack ? `: ${n.nack.message}` : ''}`,
    );
  return stateBadge(n.state);
}

function select(name: keyof NodeQuery, label: string, values: Record<string, number>, q: NodeQuery): HTMLElement {
  const s = h('select', { name, 'aria-label': label }, h('option', { value: '' }, `any ${label}`));
  for (const [v, n] of Object.entries(values).sort()) {
    const o = h('option', { value: v }, `${v} (${n})`);
    if (q[name] === v) o.selected = true;
    s.append(o);
  }
  return s;
}

/** The form and the page; `go` moves to another query (it becomes the address). */
export function renderNodes(page: NodePage, q: NodeQuery, go: (q: NodeQuery) => void): HTMLElement {
  const form = h('form', { id: 'node-filter', role: 'search' });
  const text = h('input', {
    type: 'search',
    name: 'q',
    value: q.q,
    placeholder: 'node id contains…',
    'aria-label': 'search node ids',
    maxlength: 200,
  });
  const states = h('select', { name: 'state', 'aria-label': 'state' }, h('option', { value: '' }, 'any state'));
  for (const s of NODE_STATES) {
    const o = h('option', { value: s }, s);
    if (q.state === s) o.selected = true;
    states.append(o);
  }
  form.append(
    text,
    select('group', 'group', page.facets.group, q),
    states,
    select('transport', 'transport', page.facets.transport, q),
    select('client', 'client', page.facets.client, q),
    select('version', 'version', page.facets.version, q),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const read = (): NodeQuery => {
    const d = new FormData(form);
    const v = (k: string) => {
      const x = d.get(k);
      return typeof x === 'string' ? x : '';
    };
    return {
      q: v('q'),
      group: v('group'),
      state: v('state'),
      transport: v('transport'),
      client: v('client'),
      version: v('version'),
      offset: 0,
    };
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    go(read());
  });
  for (const s of form.querySelectorAll('select')) s.addEventListener('change', () => go(read()));
  const rows = page.nodes.map((n) =>
    h(
      'tr',
      { 'data-node': n.nodeId },
      h('td', {}, h('a', { href: `#/node/${encodeURIComponent(n.nodeId)}` }, n.nodeId)),
      h('td', {}, n.group, n.stage ? ` (stage ${n.stage})` : ''),
      h('td', {}, n.versionId ?? ''),
      h('td', {}, badge(n)),
      h('td', {}, n.transport),
      h('td', {}, n.client),
      h('td', {}, n.replica ?? ''),
      h('td', {}, time(n.connectedAt)),
    ),
  );
  const last = Math.min(page.offset + page.nodes.length, page.total);
  const pager = h(
    'nav',
    { class: 'pager', 'aria-label': 'pages' },
    h(
      'button',
      {
        type: 'button',
        disabled: page.offset === 0,
        onclick: () => go({ ...q, offset: Math.max(0, page.offset - PAGE_SIZE) }),
      },
      '← previous',
    ),
    h(
      'span',
      { id: 'node-count' },
      page.total
        ? ` ${page.offset + 1}–${last} of ${page.total} matching (${page.all} in all) `
        : ` none of ${page.all} match `,
    ),
    h(
      'button',
      { type: 'button', disabled: last >= page.total, onclick: () => go({ ...q, offset: page.offset + PAGE_SIZE }) },
      'next →',
    ),
  );
  return h(
    'div',
    { id: 'nodes-view' },
    form,
    pager,
    h(
      'table',
      { id: 'nodes' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['node', 'group', 'version', 'state', 'transport', 'client', 'replica', 'connected'].map((c) =>
            h('th', { scope: 'col' }, c),
          ),
        ),
      ),
      h('tbody', {}, ...rows),
    ),
  );
}

export { search as nodeSearch };

interface NodeDetail {
  id: string;
  streams: {
    transport: string;
    peer: string;
    userAgent: string;
    connectedAt: string;
    group: string;
    clientCertificate?: { names: string; fingerprint: string; notAfter: string };
  }[];
  nacks: { at: string; typeUrl: string; version: string; message: string }[];
}

const short = (typeUrl: string) => typeUrl.slice(typeUrl.lastIndexOf('.') + 1);

export async function renderNode(id: string): Promise<HTMLElement> {
  const [detail, why] = await Promise.all([
    api<NodeDetail>(`nodes/${encodeURIComponent(id)}`),
    api<NodeExplanation>(`nodes/${encodeURIComponent(id)}/explain`).catch((e: Error) => e),
  ]);
  const stream = detail.streams[0];
  const cert = detail.streams.find((s) => s.clientCertificate)?.clientCertificate;
  const fp = cert?.fingerprint;
  const stateClass = (s: string) => (s === 'in sync' ? 'in-sync' : s === 'refused' ? 'nacked' : 'behind');
  return h(
    'div',
    { id: 'node-view' },
    h('h2', {}, `Node ${id}`),
    h('p', {}, h('a', { href: '#/nodes' }, '← all nodes')),
    stream
      ? h(
          'p',
          {},
          `group ${stream.group} · ${detail.streams.map((s) => `${s.transport} from ${s.peer}`).join(', ')} · `,
          `${stream.userAgent || 'unknown client'} · connected `,
          time(stream.connectedAt),
        )
      : h('p', {}, 'not connected'),
    h('h3', {}, 'What it is served, and why'),
    why instanceof Error
      ? h('p', { class: 'muted' }, why.message)
      : h(
          'table',
          { id: 'explain' },
          h('thead', {}, h('tr', {}, ...['type', 'state', 'why'].map((c) => h('th', { scope: 'col' }, c)))),
          h(
            'tbody',
            {},
            ...why.types.map((t) =>
              h(
                'tr',
                {},
                h('td', {}, t.type),
                h('td', {}, h('span', { class: `badge ${stateClass(t.state)}` }, t.state)),
                h(
                  'td',
                  {},
                  t.summary,
                  t.rules.length ? h('div', { class: 'muted' }, `rules: ${t.rules.map((r) => r.rule).join(', ')}`) : '',
                ),
              ),
            ),
          ),
        ),
    h('h3', {}, 'NACK history'),
    detail.nacks.length
      ? h(
          'ul',
          { id: 'nack-history' },
          ...detail.nacks.map((n) =>
            h(
              'li',
              {},
              time(n.at),
              ` ${short(n.typeUrl)} version ${n.version}: `,
              h('span', { class: 'mono' }, n.message),
            ),
          ),
        )
      : h('p', { id: 'nack-history' }, 'none'),
    h('h3', {}, 'Client certificate'),
    cert
      ? h('p', { id: 'certificate' }, `${cert.names} · expires `, time(cert.notAfter), ` · sha256 ${fp}`)
      : h('p', { id: 'certificate' }, 'none (the connection is not mutual TLS)'),
  );
}
