/**
 * The fleet status page: one static HTML document whose script polls the status API. No build
 * step, no framework; values are inserted as text (never as HTML). With admin tokens enabled,
 * open it as /#token=<token> (kept in sessionStorage, sent as a bearer token, never in a URL query).
 */
export const STATUS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fleetxds status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}th{background:#f4f4f4}
.ok{color:#176117}.bad{color:#a11}.warn{color:#8a5a00}.mono{font-family:ui-monospace,monospace;font-size:12px}#error{color:#a11}
</style></head><body>
<h1>fleetxds</h1><div id="version">loading…</div><div id="error"></div>
<h2>Rollout</h2><table id="rollout"><thead><tr><th>group</th><th>type</th><th>version</th><th>ACKed</th><th>NACKed</th><th>behind</th></tr></thead><tbody></tbody></table>
<h2>Nodes</h2><table id="nodes"><thead><tr><th>node</th><th>group</th><th>transport</th><th>address</th><th>agent</th><th>per type: sent / ACKed</th><th>last NACK</th></tr></thead><tbody></tbody></table>
<h2>Last rejected config</h2><div id="rejection">none</div>
<h2>File rendering</h2><div id="files">ok</div>
<h2>History</h2><table id="history"><thead><tr><th>#</th><th>applied</th><th>source</th><th>commit</th><th>who / what</th></tr></thead><tbody></tbody></table>
<script>
const m = location.hash.match(/token=([^&]+)/);
if (m) { sessionStorage.setItem('fleetxds-token', m[1]); history.replaceState(null, '', location.pathname); }
const token = sessionStorage.getItem('fleetxds-token');
const short = (t) => t.slice(t.lastIndexOf('.') + 1);
function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; }
function row(cells) { const tr = document.createElement('tr'); for (const c of cells) { const td = document.createElement('td'); if (c instanceof Node) td.appendChild(c); else td.textContent = c == null ? '' : String(c); tr.appendChild(td); } return tr; }
function fill(id, rows) { const tb = document.querySelector('#' + id + ' tbody'); tb.replaceChildren(...rows); }
async function refresh() {
  try {
    const res = await fetch('api/v1/status', { headers: token ? { authorization: 'Bearer ' + token } : {} });
    if (!res.ok) throw new Error(res.status === 401 ? 'a token is needed: open this page as /#token=...' : 'status API: HTTP ' + res.status);
    const s = await res.json();
    document.getElementById('error').textContent = '';
    const v = s.version;
    document.getElementById('version').textContent = v ? 'version ' + v.id + ' applied ' + v.appliedAt + (v.commitSha ? ' from commit ' + v.commitSha.slice(0, 12) : '') + (v.subject ? ' (' + v.subject + ')' : '') : 'no version applied';
    fill('rollout', s.rollout.map((r) => row([r.group, short(r.typeUrl), el('span', r.version, 'mono'),
      el('span', 'version ' + r.version + ': ' + r.acked + ' of ' + r.nodes + ' nodes ACKed', r.acked === r.nodes ? 'ok' : 'warn'),
      el('span', String(r.nacked), r.nacked ? 'bad' : ''), r.behind])));
    fill('nodes', s.nodes.map((n) => row([n.nodeId, n.group, n.transport, n.peer, n.userAgent,
      el('span', Object.entries(n.types).map(([t, x]) => short(t) + ': ' + (x.sentVersion || '-') + ' / ' + (x.ackedVersion || '-')).join('  '), 'mono'),
      n.lastNack ? el('span', short(n.lastNack.typeUrl) + ' ' + n.lastNack.at + ': ' + n.lastNack.message, 'bad') : ''])));
    const ff = s.fileFailures || [];
    document.getElementById('files').textContent = ff.length ? ff.map((f) => 'group ' + f.group + ' failed at version ' + f.versionId + ' (' + f.at + '): ' + f.error).join('; ') : 'ok';
    const r = s.rejection;
    document.getElementById('rejection').textContent = r ? r.rejectedAt + ' (' + r.source + '): ' + r.diagnostics.map((d) => (d.location ? d.location.file + ':' + d.location.line + ': ' : '') + d.message).join('; ') : 'none';
    fill('history', s.history.map((h) => row([h.id, h.appliedAt, h.sourceKind, h.commitSha ? h.commitSha.slice(0, 12) : '', [h.author, h.subject].filter(Boolean).join(': ')])));
  } catch (e) { document.getElementById('error').textContent = String(e.message || e); }
}
refresh(); setInterval(refresh, 1000);
</script></body></html>`;
