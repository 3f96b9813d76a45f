/**
 * The fleet status page: one static HTML document whose script polls the status API. No build
 * step, no framework; values are inserted as text (never as HTML). With admin tokens enabled,
 * open it as /#token=<token> (kept in sessionStorage, sent as a bearer token, never in a URL query).
 */
export const STATUS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fleetxds status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse;width:100%}th{background:#f4f4f4}
th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
.ok{color:#176117}.bad{color:#a11}.warn{color:#8a5a00}#error{color:#a11}
.mono{font-family:ui-monospace,monospace;font-size:12px}
button.link{background:none;border:0;padding:0;color:#0645ad;text-decoration:underline;cursor:pointer;font:inherit}
</style></head><body>
<h1>fleetxds</h1><div id="version">loading…</div><div id="error"></div>
<h2>Staged rollout</h2><div id="staged">none</div>
<h2>Rollout</h2><table id="rollout"><thead><tr>
<th>group</th><th>type</th><th>version</th><th>ACKed</th><th>NACKed</th><th>behind</th>
</tr></thead><tbody></tbody></table>
<h2>Nodes</h2><table id="nodes"><thead><tr>
<th>node</th><th>group</th><th>transport</th><th>address</th><th>agent</th><th>client certificate</th>
<th>per type: sent / ACKed</th><th>last NACK</th>
</tr></thead><tbody></tbody></table>
<h2>Why a node holds what it holds</h2><div id="explain">choose a node above</div>
<h2>Listeners</h2><table id="listeners"><thead><tr>
<th>group</th><th>listener</th><th>kind</th><th>address</th><th>TLS</th><th>passed through</th><th>protections</th>
</tr></thead><tbody></tbody></table>
<h2>Registered endpoints</h2><table id="registrations"><thead><tr>
<th>service</th><th>address</th><th>state</th><th>last heartbeat</th><th>identity</th>
</tr></thead><tbody></tbody></table>
<h2>Envoy patches</h2><table id="patches"><thead><tr>
<th>patch</th><th>groups</th><th>target</th><th>form</th><th>description</th>
</tr></thead><tbody></tbody></table>
<h2>Config tree</h2><div id="tree">read</div>
<h2>Last rejected config</h2><div id="rejection">none</div>
<h2>File rendering</h2><div id="files">ok</div>
<h2>fleetxds's certificates</h2><div id="certs">no TLS listener</div>
<h2>History</h2><table id="history"><thead><tr>
<th>#</th><th>applied</th><th>source</th><th>commit</th><th>who / what</th>
</tr></thead><tbody></tbody></table>
<script>
const m = location.hash.match(/token=([^&]+)/);
if (m) { sessionStorage.setItem('fleetxds-token', m[1]); history.replaceState(null, '', location.pathname); }
const token = sessionStorage.getItem('fleetxds-token');
const short = (t) => t.slice(t.lastIndexOf('.') + 1);
const byId = (id) => document.getElementById(id);
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function row(cells) {
  const tr = document.createElement('tr');
  for (const c of cells) {
    const td = document.createElement('td');
    if (c instanceof Node) td.appendChild(c);
    else td.textContent = c == null ? '' : String(c);
    tr.appendChild(td);
  }
  return tr;
}
function fill(id, rows) { document.querySelector('#' + id + ' tbody').replaceChildren(...rows); }
function versionLine(v) {
  if (!v) return 'no version applied';
  const commit = v.commitSha ? ' from commit ' + v.commitSha.slice(0, 12) : '';
  return 'version ' + v.id + ' applied ' + v.appliedAt + commit +
    (v.subject ? ' (' + v.subject + ')' : '');
}
function rolloutRow(r) {
  const acked = 'version ' + r.version + ': ' + r.acked + ' of ' + r.nodes + ' nodes ACKed';
  return row([r.group, short(r.typeUrl), el('span', r.version, 'mono'),
    el('span', acked, r.acked === r.nodes ? 'ok' : 'warn'),
    el('span', String(r.nacked), r.nacked ? 'bad' : ''), r.behind]);
}
function nodeRow(n) {
  const types = Object.entries(n.types)
    .map(([t, x]) => short(t) + ': ' + (x.sentVersion || '-') + ' / ' + (x.ackedVersion || '-'));
  const l = n.lastNack;
  const nack = l ? el('span', short(l.typeUrl) + ' ' + l.at + ': ' + l.message, 'bad') : '';
  const group = n.stage ? n.group + ' (stage ' + n.stage + ')' : n.group;
  const id = el('button', n.nodeId, 'link');
  id.title = 'why this node holds what it holds';
  id.addEventListener('click', () => { explained = n.nodeId; explain(); });
  return row([id, group, n.transport, n.peer, n.userAgent, clientCertCell(n.clientCertificate),
    el('span', types.join('  '), 'mono'), nack]);
}
function expiry(notAfter) {
  const days = Math.floor((Date.parse(notAfter) - Date.now()) / DAY_MS);
  return { days, text: days < 0 ? 'expired at ' + notAfter : 'expires ' + notAfter + ' (in ' + days + ' days)',
    cls: days < 0 ? 'bad' : days < 14 ? 'warn' : 'ok' };
}
function clientCertCell(c) {
  if (!c) return '-';
  const e = expiry(c.notAfter);
  return el('span', c.names + ', ' + e.text + ', sha256 ' + c.fingerprint.slice(0, 23) + '...', e.cls);
}
function rejectionLine(r) {
  if (!r) return 'none';
  const where = (d) => (d.location ? d.location.file + ':' + d.location.line + ': ' : '');
  return r.rejectedAt + ' (' + r.source + '): ' + r.diagnostics.map((d) => where(d) + d.message).join('; ');
}
function treeLine(u) {
  if (!u) return el('span', 'read', 'ok');
  return el('span', 'could not be read completely since ' + u.since + ' (' + u.failedReads + ' reads): ' + u.reason +
    '; the last good version is served; next read at ' + u.nextReadAt, 'bad');
}
const DAY_MS = 86400000;
function certLine(c) {
  const e = expiry(c.notAfter);
  return el('div', c.listener + ': ' + c.subject + ', ' + e.text + ', sha256 ' + c.fingerprint, e.cls);
}
function stagedLines(st) {
  const r = st && (st.rollout || st.last);
  if (!r) return [el('div', 'none')];
  const head = 'rollout #' + r.id + ': ' + r.status + ', version ' + r.from + ' -> ' + r.to + ', stage ' + r.stage;
  const lines = [el('div', head, r.status === 'halted' ? 'bad' : r.status === 'progressing' ? 'warn' : 'ok')];
  if (r.halt) lines.push(el('div', 'halted (' + r.halt.reason + ')' + (r.halt.nodeId ? ' by ' + r.halt.nodeId : '') +
    (r.halt.message ? ': ' + r.halt.message : ''), 'bad'));
  for (const s of r.stages) lines.push(el('div', s.summary, 'mono'));
  return lines;
}
const KIND = { http: 'HTTP', tcp: 'TCP', passthrough: 'TLS passthrough', grpc: 'proxyless gRPC' };
function listenerRow(l) {
  return row([l.group, l.name, KIND[l.kind] || l.kind, l.address || '', l.tls ? 'terminated' : '',
    l.passthrough.join(', '), l.protections.join(', ')]);
}
function historyRow(h) {
  return row([h.id, h.appliedAt, h.sourceKind, h.commitSha ? h.commitSha.slice(0, 12) : '',
    [h.author, h.subject].filter(Boolean).join(': ')]);
}
let explained;
function explainLines(e) {
  const head = el('div', 'node ' + e.nodeId + ': group ' + e.group + ', ' +
    (e.connected ? 'connected' : 'disconnected') + ' (' + e.transports.join(', ') + ')');
  const cls = (st) => (st === 'in sync' ? 'ok' : st === 'refused' ? 'bad' : st === 'behind' ? 'warn' : '');
  return [head, ...e.types.map((t) => {
    const line = el('div');
    line.append(el('span', t.type + ' '), el('span', t.state, cls(t.state)), el('span', ': ' + t.summary));
    return line;
  })];
}
async function explain() {
  if (!explained) return;
  const res = await fetch('api/v1/nodes/' + encodeURIComponent(explained) + '/explain',
    { headers: token ? { authorization: 'Bearer ' + token } : {} });
  const body = await res.json();
  byId('explain').replaceChildren(...(res.ok ? explainLines(body) : [el('span', body.error, 'bad')]));
}
async function refresh() {
  try {
    const res = await fetch('api/v1/status', { headers: token ? { authorization: 'Bearer ' + token } : {} });
    if (!res.ok) {
      const why = res.status === 401
        ? 'a token is needed: open this page as /#token=...'
        : 'status API: HTTP ' + res.status;
      throw new Error(why);
    }
    const s = await res.json();
    byId('error').textContent = '';
    byId('version').textContent = versionLine(s.version);
    byId('staged').replaceChildren(...stagedLines(s.staged));
    fill('rollout', s.rollout.map(rolloutRow));
    fill('nodes', s.nodes.map(nodeRow));
    fill('listeners', (s.listeners || []).map(listenerRow));
    const stateCls = (st) => (st === 'healthy' ? 'ok' : st === 'draining' ? 'warn' : 'bad');
    fill('registrations', (s.registrations || []).map((r) =>
      row([r.service, r.address, el('span', r.state, stateCls(r.state)), r.lastSeen, r.identity])));
    fill('patches', (s.patches || []).map((p) =>
      row([p.name, p.groups === 'all' ? 'all' : p.groups.join(', '), p.target, p.form, p.description || ''])));
    const ff = s.fileFailures || [];
    byId('files').textContent = ff.length
      ? ff.map((f) => 'group ' + f.group + ' failed at version ' + f.versionId + ' (' + f.at + '): ' + f.error)
        .join('; ')
      : 'ok';
    byId('rejection').textContent = rejectionLine(s.rejection);
    byId('tree').replaceChildren(treeLine(s.unreadableTree));
    const certs = s.listenerCertificates || [];
    if (certs.length) byId('certs').replaceChildren(...certs.map(certLine));
    fill('history', s.history.map(historyRow));
    await explain();
  } catch (e) { byId('error').textContent = String(e.message || e); }
}
refresh(); setInterval(refresh, 1000);
</script></body></html>`;
