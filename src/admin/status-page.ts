/**
 * The fleet status page: this document and one script (src/admin/page/, bundled at build time and
 * served as /assets/fleet-page.js: see page-assets.ts). The document holds no data; the script asks
 * the API. With admin tokens enabled, open it as /#token=<token> (kept in sessionStorage, sent as
 * a bearer token, never in a URL query).
 */
export const STATUS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>fleetxds</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root{--ok:#176117;--warn:#8a5a00;--bad:#a11;--muted:#555;--line:#ddd;--accent:#0645ad}
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{display:flex;gap:1.5em;align-items:baseline;padding:.7em 1.5em;background:#1f2933;color:#fff;flex-wrap:wrap}
header h1{font-size:1.2em;margin:0}header #who{margin-left:auto;color:#cbd2d9}
nav.main a{color:#e4e7eb;text-decoration:none;padding:.2em .4em;border-radius:3px}
nav.main a[aria-current=page]{background:#fff;color:#1f2933}
nav.main a:focus-visible,a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{
  outline:3px solid #f0b429;outline-offset:1px}
main{padding:1em 1.5em;max-width:1200px}
h2{font-size:1.1em;margin:1.2em 0 .4em}h3{font-size:1em;margin:1em 0 .3em}
a{color:var(--accent)}
.muted{color:var(--muted)}.mono,pre{font-family:ui-monospace,monospace;font-size:12px}
.headline{font-size:1.05em}
#error{color:var(--bad);padding:0 1.5em}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(280px,1fr));gap:1em}
.card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:.8em 1em}
.card h3{margin:0 0 .2em;font-size:1.1em}.card p{margin:.3em 0}
.empty{color:var(--muted);font-style:italic}
.bar{display:flex;height:12px;border-radius:6px;overflow:hidden;background:#eee;margin:.5em 0}
.seg.in-sync{background:#3f9142}
.seg.behind{background:#e8a317;
  background-image:repeating-linear-gradient(45deg,transparent 0 4px,rgba(255,255,255,.4) 4px 8px)}
.seg.nacked{background:#c92a2a;
  background-image:repeating-linear-gradient(-45deg,transparent 0 2px,rgba(255,255,255,.5) 2px 4px)}
.badge{display:inline-block;padding:0 .4em;border-radius:3px;border:1px solid currentColor;white-space:nowrap;
  max-width:40em;overflow:hidden;text-overflow:ellipsis;vertical-align:bottom}
.badge.in-sync{color:var(--ok)}.badge.behind{color:var(--warn)}.badge.nacked{color:var(--bad)}
ul#problems{padding:0;list-style:none}
.problem{padding:.4em .6em;margin:.3em 0;border-left:4px solid;background:#fff}
.problem.error{border-color:var(--bad)}.problem.warning{border-color:var(--warn)}.ok{color:var(--ok)}
table{border-collapse:collapse;width:100%;background:#fff}th{background:#f0f0f0;text-align:left}
th,td{border-bottom:1px solid var(--line);padding:.3em .5em;vertical-align:top}
form#node-filter{display:flex;gap:.5em;flex-wrap:wrap;margin:.5em 0}
.pager{margin:.5em 0}
ol.timeline{list-style:none;padding:0;border-left:3px solid var(--line);margin-left:.5em}
ol.timeline li{padding:.4em 0 .6em 1em;position:relative}
ol.timeline li::before{content:"";position:absolute;left:-9px;top:.7em;width:13px;height:13px;
  border-radius:50%;background:#fff;border:2px solid var(--muted)}
ol.timeline li.done::before{background:var(--ok);border-color:var(--ok)}
ol.timeline li.current::before{background:var(--warn);border-color:var(--warn)}
progress{width:12em;vertical-align:middle}
.actions button,td button{margin-right:.4em}
button.link{background:none;border:0;padding:0;color:var(--accent);text-decoration:underline;cursor:pointer;
  font:inherit}
pre.diff{background:#fff;border:1px solid var(--line);padding:.5em;overflow:auto;max-height:30em}
pre.diff .add{background:#e6ffed;display:block}pre.diff .del{background:#ffeef0;display:block}
.plot{background:#fff;border:1px solid var(--line);border-radius:6px;padding:.5em;margin:0 0 1em;max-width:680px}
.plot svg{width:100%;height:auto}.plot .axis{stroke:#999}.plot .tick{font-size:10px;fill:var(--muted)}
.plot .line{fill:none;stroke-width:2}
.dot.s1{fill:#1f6feb}.dot.s2{fill:#8250df}.dot.s3{fill:#c92a2a}
.line.s1{stroke:#1f6feb}.line.s2{stroke:#8250df}.line.s3{stroke:#c92a2a}
.legend .key{margin-right:1em}.key.s1{color:#1f6feb}.key.s2{color:#8250df}.key.s3{color:#c92a2a}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
</style></head><body>
<header><h1>fleetxds</h1>
<nav class="main" aria-label="views">
<a href="#/">Fleet</a> <a href="#/rollout">Rollout</a> <a href="#/nodes">Nodes</a>
<a href="#/history">History</a> <a href="#/health">Push health</a> <a href="#/served">Served</a>
</nav><span id="who"></span></header>
<div id="error" role="alert"></div>
<main id="view" aria-live="polite">loading…</main>
<script src="assets/fleet-page.js"></script>
</body></html>`;
