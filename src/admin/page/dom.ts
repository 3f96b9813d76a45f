/**
 * What every view of the status page uses: elements built from text (values are never parsed as
 * HTML), the API with the page's token, and the words for times and states.
 */
import type { NodeState } from '../node-state.ts';

type Child = Node | string | number | null | undefined | false;

/** An element with attributes (`on*` functions become listeners) and children (text stays text). */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | ((e: Event) => void) | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') e.addEventListener(k.slice(2).toLowerCase(), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  for (const c of children)
    if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

const TOKEN_KEY = 'fleetxds-token';

/**
 * Keeps a `#token=...` of the address in the session (never in a URL query) and removes it from
 * the address; whether there was one.
 */
export function takeToken(): boolean {
  const m = /token=([^&]+)/.exec(location.hash);
  if (!m) return false;
  sessionStorage.setItem(TOKEN_KEY, m[1]!);
  history.replaceState(null, '', location.pathname);
  return true;
}

/** A call of the admin API; its refusals become errors with the server's own words. */
export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const res = await fetch(`api/v1/${path}`, {
    method: init.method ?? 'GET',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const body = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (!res.ok) {
    const why =
      res.status === 401 ? 'a token is needed: open this page as /#token=...' : (body.error ?? `HTTP ${res.status}`);
    throw new Error(why);
  }
  return body;
}

/** "3m ago", "in 2h": a time as people read it beside the exact one (in the title). */
export function ago(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const ms = now - Date.parse(iso);
  const abs = Math.abs(ms);
  const text =
    abs < 60_000
      ? `${Math.round(abs / 1000)}s`
      : abs < 3_600_000
        ? `${Math.round(abs / 60_000)}m`
        : abs < 86_400_000
          ? `${Math.round(abs / 3_600_000)}h`
          : `${Math.round(abs / 86_400_000)}d`;
  return ms >= 0 ? `${text} ago` : `in ${text}`;
}

/** A time: relative, with the exact time as its title. */
export function time(iso: string | undefined): HTMLElement {
  return h('time', { datetime: iso ?? '', title: iso ?? '' }, ago(iso));
}

/** A state in words and a symbol, so it reads without colour too. */
export const STATE_LABEL: Record<NodeState, string> = {
  'in-sync': '✓ in sync',
  behind: '◐ behind',
  nacked: '✗ NACKed',
};

export function stateBadge(state: NodeState, detail?: string): HTMLElement {
  return h('span', { class: `badge ${state}` }, STATE_LABEL[state], detail ? ` ${detail}` : '');
}

/** Asks before a decision that changes what proxies are served. */
export function confirmed(what: string): boolean {
  return window.confirm(`${what}?\n\nThis changes what proxies are served, and is audited.`);
}
