/**
 * The status page's script (bundled at build time; the server serves it as /assets/fleet-page.js).
 * One view at a time, chosen by the address (#/, #/rollout, #/nodes?..., #/node/ID, #/history,
 * #/health, #/served): each asks the API for what it shows (summaries and one page of nodes,
 * never every node) and polls only while shown.
 */
import type { HealthPoint } from '../../status/push-health.ts';
import { api, takeToken } from './dom.ts';
import { renderDiff, renderHistory, type VersionsAnswer } from './history.ts';
import { renderHealth } from './health.ts';
import { fetchNodes, nodeSearch, queryOf, renderNode, renderNodes, type NodeQuery } from './nodes.ts';
import { renderOverview, type FleetAnswer } from './overview.ts';
import type { AuditEntry } from '../../store/audit.ts';
import { renderRollout, type RolloutAnswer } from './rollout.ts';
import { renderServed, type ServedAnswer } from './served.ts';

const POLL_MS = 2000;
const view = document.getElementById('view')!;
const error = document.getElementById('error')!;
let admin = false;
let timer: ReturnType<typeof setTimeout> | undefined;
/** Bumped on every navigation, so an answer for a view left behind is dropped. */
let generation = 0;

function route(): { name: string; arg: string; params: URLSearchParams } {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = hash.split('?');
  const [name = '', ...rest] = path.split('/');
  return { name, arg: decodeURIComponent(rest.join('/')), params: new URLSearchParams(query) };
}

function markNav(name: string): void {
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav.main a')) {
    const target = a.getAttribute('href')!.replace(/^#\/?/, '');
    if (target === name || (target === 'nodes' && name === 'node')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

/** Shows what `load` renders, again every POLL_MS while the view stays; keeps focus and form input. */
function show(load: () => Promise<HTMLElement>, poll = true): void {
  const mine = ++generation;
  let first = true;
  const tick = async () => {
    try {
      const el = await load();
      if (mine !== generation) return;
      // A poll (not the view's first showing) does not replace a field the operator is in.
      const active = document.activeElement;
      const typing = active && view.contains(active) && active.matches('input, select, textarea');
      if (!first && typing) return;
      first = false;
      view.replaceChildren(el);
      error.textContent = '';
    } catch (e) {
      if (mine === generation) error.textContent = (e as Error).message;
    } finally {
      if (poll && mine === generation) timer = setTimeout(() => void tick(), POLL_MS);
    }
  };
  clearTimeout(timer);
  void tick();
}

function nodesTo(q: NodeQuery): void {
  location.hash = `#/nodes${nodeSearch(q) ? `?${nodeSearch(q)}` : ''}`;
}

function render(): void {
  const { name, arg, params } = route();
  markNav(name);
  switch (name) {
    case 'nodes': {
      const q = queryOf(params);
      show(async () => renderNodes(await fetchNodes(q), q, nodesTo));
      break;
    }
    case 'node':
      show(() => renderNode(arg));
      break;
    case 'rollout':
      show(async () => {
        const [r, a] = await Promise.all([api<RolloutAnswer>('rollout'), api<{ audit: AuditEntry[] }>('audit')]);
        return renderRollout(r, a.audit, admin, render);
      });
      break;
    case 'history': {
      const pick = { a: Number(params.get('a')) || undefined, b: Number(params.get('b')) || undefined };
      const go = (p: { a?: number; b?: number }) => {
        const s = new URLSearchParams();
        if (p.a) s.set('a', String(p.a));
        if (p.b) s.set('b', String(p.b));
        location.hash = `#/history?${s.toString()}`;
      };
      show(async () => {
        // The groups, for the pin buttons.
        const [versions, fleet] = await Promise.all([
          api<VersionsAnswer>('versions?limit=50'),
          api<FleetAnswer>('fleet'),
        ]);
        const groups = fleet.groups.map((g) => g.group);
        const page = renderHistory(versions, groups, admin, pick, go, render);
        if (pick.a && pick.b) page.querySelector('#diff')!.replaceChildren(await renderDiff(pick.a, pick.b));
        return page;
      }, false);
      break;
    }
    case 'health':
      show(async () => renderHealth((await api<{ minutes: HealthPoint[] }>('fleet/health')).minutes));
      break;
    case 'served':
      show(async () => renderServed(await api<ServedAnswer>('served')), false);
      break;
    default:
      show(async () => renderOverview(await api<FleetAnswer>('fleet')));
  }
}

/** Who the token is (an admin is offered the decisions), then the view. */
function start(): void {
  void api<{ role: string }>('whoami')
    .then((w) => {
      admin = w.role === 'admin';
      document.getElementById('who')!.textContent = admin ? 'admin' : 'read-only';
    })
    .catch(() => undefined)
    .finally(render);
}

takeToken();
// A token given later (another #token=...) replaces the first; the role is asked again.
window.addEventListener('hashchange', () => (takeToken() ? start() : render()));
start();
