/** What the fleet is served beside versions: listeners, registrations, Envoy patches, fleetxds's certificates. */
import { h, time } from './dom.ts';

export interface ServedAnswer {
  listeners: {
    group: string;
    name: string;
    kind: string;
    address?: string;
    tls: boolean;
    passthrough: string[];
    protections: string[];
  }[];
  registrations: { service: string; address: string; state: string; lastSeen: string; identity: string }[];
  patches: { name: string; groups: string[] | 'all'; target: string; form: string; description?: string }[];
  listenerCertificates: { listener: string; subject: string; fingerprint: string; notAfter: string }[];
}

const KIND: Record<string, string> = {
  http: 'HTTP',
  tcp: 'TCP',
  passthrough: 'TLS passthrough',
  grpc: 'proxyless gRPC',
  'grpc-server': 'gRPC server',
};

function table(id: string, cols: string[], rows: (string | Node)[][], empty: string): HTMLElement {
  if (!rows.length) return h('p', { id }, empty);
  return h(
    'table',
    { id },
    h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))),
  );
}

export function renderServed(s: ServedAnswer): HTMLElement {
  return h(
    'div',
    { id: 'served-view' },
    h('h2', {}, 'Listeners'),
    table(
      'listeners',
      ['group', 'listener', 'kind', 'address', 'TLS', 'passed through', 'protections'],
      s.listeners.map((l) => [
        l.group,
        l.name,
        KIND[l.kind] ?? l.kind,
        l.address ?? '',
        l.tls ? 'terminated' : '',
        l.passthrough.join(', '),
        l.protections.join(', '),
      ]),
      'none',
    ),
    h('h2', {}, 'Registered endpoints'),
    table(
      'registrations',
      ['service', 'address', 'state', 'last heartbeat', 'identity'],
      s.registrations.map((r) => [r.service, r.address, r.state, time(r.lastSeen), r.identity]),
      'none',
    ),
    h('h2', {}, 'Envoy patches'),
    table(
      'patches',
      ['patch', 'groups', 'target', 'form', 'description'],
      s.patches.map((p) => [
        p.name,
        p.groups === 'all' ? 'all' : p.groups.join(', '),
        p.target,
        p.form,
        p.description ?? '',
      ]),
      'none',
    ),
    h('h2', {}, "fleetxds's certificates"),
    table(
      'certs',
      ['listener', 'subject', 'expires', 'sha256'],
      s.listenerCertificates.map((c) => [c.listener, c.subject, time(c.notAfter), c.fingerprint]),
      'no TLS listener',
    ),
  );
}
