/**
 * Push health over the last hour, one point a minute, from the server's own metrics: push latency
 * to ACK (p50, p99), responses and NACKs per minute, connected proxies. Plain SVG: three line
 * charts need no plotting library. Each chart also has its figures as a table for screen readers.
 */
import type { HealthPoint } from '../../status/push-health.ts';
import { h } from './dom.ts';

const W = 640;
const H = 160;
const PAD = { left: 48, right: 12, top: 12, bottom: 24 };
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

interface Series {
  label: string;
  cls: string;
  /** Dashed lines tell series apart without colour. */
  dash?: string;
  values: (number | undefined)[];
}

function chart(title: string, unit: string, points: HealthPoint[], series: Series[]): HTMLElement {
  const max = Math.max(1e-9, ...series.flatMap((s) => s.values.filter((v): v is number => v !== undefined)));
  const x = (i: number) => PAD.left + (i * (W - PAD.left - PAD.right)) / Math.max(1, points.length - 1);
  const y = (v: number) => PAD.top + (1 - v / max) * (H - PAD.top - PAD.bottom);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, class: 'chart' });
  root.append(
    svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: 'axis' }),
    svg('text', { x: 4, y: y(max) + 4, class: 'tick' }, `${fmt(max)} ${unit}`),
    svg('text', { x: 4, y: y(0), class: 'tick' }, `0`),
    svg('text', { x: PAD.left, y: H - 4, class: 'tick' }, '60 min ago'),
    svg('text', { x: W - PAD.right - 24, y: H - 4, class: 'tick' }, 'now'),
  );
  for (const s of series) {
    // A gap (no value) breaks the line rather than drawing it to zero.
    let d = '';
    s.values.forEach((v, i) => {
      if (v === undefined) return;
      d += `${d && s.values[i - 1] !== undefined ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    root.append(svg('path', { d, class: `line ${s.cls}`, ...(s.dash ? { 'stroke-dasharray': s.dash } : {}) }));
    // A minute alone between gaps (the first minute after a start) would draw no line: a dot marks each.
    s.values.forEach((v, i) => {
      if (v !== undefined)
        root.append(svg('circle', { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 2.5, class: `dot ${s.cls}` }));
    });
  }
  const legend = h(
    'p',
    { class: 'legend' },
    ...series.map((s) => h('span', { class: `key ${s.cls}` }, `${s.dash ? '┄' : '━'} ${s.label}`)),
  );
  return h('figure', { class: 'plot', 'data-plot': title }, h('figcaption', {}, title), root, legend);
}

const fmt = (v: number) => (v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toPrecision(2));

export function renderHealth(points: HealthPoint[]): HTMLElement {
  const ms = (v: number | undefined) => (v === undefined ? undefined : v * 1000);
  const table = h(
    'table',
    { class: 'sr-only', id: 'health-figures' },
    h('caption', {}, 'Push health per minute'),
    h(
      'tr',
      {},
      ...['minute', 'p50 ms', 'p99 ms', 'pushes', 'NACKs', 'connected'].map((c) => h('th', { scope: 'col' }, c)),
    ),
    ...points
      .filter((p) => p.pushes || p.acks || p.nacks)
      .map((p) =>
        h(
          'tr',
          {},
          ...[p.at, ms(p.p50), ms(p.p99), p.pushes, p.nacks, p.connected].map((v) =>
            h('td', {}, v === undefined ? '' : String(v)),
          ),
        ),
      ),
  );
  return h(
    'div',
    { id: 'health-view' },
    chart('Push latency to ACK', 'ms', points, [
      { label: 'p50', cls: 's1', values: points.map((p) => ms(p.p50)) },
      { label: 'p99', cls: 's2', dash: '6 4', values: points.map((p) => ms(p.p99)) },
    ]),
    chart('Pushes and NACKs per minute', '', points, [
      { label: 'responses sent', cls: 's1', values: points.map((p) => p.pushes) },
      { label: 'NACKs', cls: 's3', dash: '6 4', values: points.map((p) => p.nacks) },
    ]),
    chart('Connected proxies', '', points, [{ label: 'connected', cls: 's1', values: points.map((p) => p.connected) }]),
    table,
  );
}
