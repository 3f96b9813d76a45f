/**
 * The status page with 5,000 connected streams, in a real headless Chromium: the fleet view loads
 * in under 2 seconds, it asks for summaries and pages (never every node), it stays responsive
 * while it polls (no long task in the page), the node list finds one node among thousands by its
 * badge's words, it works from the keyboard, and a read-only token is offered no decision.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium, type Browser, type Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectPath } from '../../src/shared/paths.ts';
import { newToken } from '../../src/security/tokens.ts';
import { spawnServer, waitFor, type ServerProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const STREAMS = 5000;
const readToken = newToken();
const adminToken = newToken();
let server: ServerProcess;
let root: string;
let crowd: ChildProcess;
let browser: Browser;
let page: Page;
/** API paths the page asked for, with the size of each answer. */
const asked: { path: string; bytes: number }[] = [];

test.before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM} (apt-get install chromium)`);
  root = tempDir('fleetxds-page-scale-');
  cpSync(projectPath('config'), root, { recursive: true });
  const settings = join(root, 'settings.yaml');
  writeFileSync(
    settings,
    `configDir: ${join(root, 'services')}
database: ${join(root, 'x.db')}
grpc: { listen: 127.0.0.1:0 }
admin:
  listen: 127.0.0.1:0
  tokens:
    - { name: ops, sha256: ${adminToken.sha256}, role: admin }
    - { name: viewer, sha256: ${readToken.sha256}, role: read }
sds: { insecureLoopbackOnly: true }
log: { level: info }
`,
  );
  server = await spawnServer(settings);
  crowd = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      projectPath('test', 'helpers', 'stream-crowd.ts'),
      String(server.grpcPort),
      String(STREAMS),
      'crowd',
    ],
    { cwd: projectPath(), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: crowd.stdout! }).on('line', (l) => l === 'ready' && resolve());
    crowd.once('exit', (code) => reject(new Error(`the crowd exited (${code})`)));
    setTimeout(() => reject(new Error('5,000 streams not connected in 120 s')), 120_000).unref();
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('response', (r) => {
    const path = new URL(r.url()).pathname;
    if (path.startsWith('/api/'))
      void r
        .body()
        .then((b) => asked.push({ path: path + new URL(r.url()).search, bytes: b.length }))
        .catch(() => undefined);
  });
});

test.after(async () => {
  crowd?.kill('SIGKILL');
  await browser?.close();
  await server?.stop('SIGKILL');
});

/** The view's screenshot: kept when FLEETXDS_SCREENSHOTS names a folder, else checked and dropped. */
async function screenshot(name: string): Promise<void> {
  const file = join(process.env.FLEETXDS_SCREENSHOTS ?? tempDir(), `status-${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  assert.ok(readFileSync(file).length > 5000, `${name}: a screenshot with something in it`);
}

/** The admin API as the read token sees it. */
const asViewer = (path: string) =>
  fetch(`http://127.0.0.1:${server.adminPort}/api/v1/${path}`, {
    headers: { authorization: `Bearer ${readToken.token}` },
  });
const fleet = async () =>
  (await (await asViewer('fleet')).json()) as { totals: { proxies: number }; versionId?: number };

const text = async (selector: string) => (await page.locator(selector).innerText()).replace(/\s+/g, ' ');

test('with 5,000 streams the fleet view shows the groups and the problems in under 2 s', async () => {
  // The server has counted every stream's state: the summary says 5,000.
  await waitFor('every stream registered', async () => (await fleet()).totals.proxies === STREAMS);
  const started = Date.now();
  await page.goto(`http://127.0.0.1:${server.adminPort}/#token=${readToken.token}`);
  await page.locator('[data-group="default"] .counts').waitFor();
  await page.locator('#problems li[data-kind=nack]').waitFor();
  const ms = Date.now() - started;
  assert.ok(ms < 2000, `loaded in ${ms} ms`);
  assert.match(await text('[data-group="default"]'), /5000 proxies: ✗ NACKed 50 · ◐ behind 100 · ✓ in sync 4850/);
  assert.match(await text('[data-group="default"]'), /clients: envoy\/1\.40\.0 3333, envoy\/1\.36\.2 1667/);
  assert.match(
    await text('#problems'),
    /50 proxies of default refused their config; newest: crowd-\d+: crowd node \d+ refuses clusters/,
  );
  assert.is(await text('#who'), 'read-only');
  await screenshot('fleet-5000');
});

test('it asks for summaries and pages, not every node, and stays responsive while polling', async () => {
  await page.evaluate(() => {
    const w = window as unknown as { longest: number };
    w.longest = 0;
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.longest = Math.max(w.longest, e.duration);
    }).observe({ type: 'longtask', buffered: false });
  });
  const before = asked.length;
  await page.waitForTimeout(6500); // three polls
  const polls = asked.slice(before);
  assert.ok(polls.length >= 3, `${polls.length} polls`);
  for (const p of polls) {
    assert.ok(!p.path.startsWith('/api/v1/status') && !p.path.startsWith('/api/v1/nodes?'), `asked ${p.path}`);
    assert.ok(p.bytes < 64 * 1024, `${p.path}: ${p.bytes} bytes`);
  }
  const longest = await page.evaluate(() => (window as unknown as { longest: number }).longest);
  assert.ok(longest < 200, `longest task while polling: ${longest} ms`);
});

test('the node list: one page of 50, the problems first, one node found among 5,000 by its id', async () => {
  const started = Date.now();
  await page.evaluate(() => (location.hash = '#/nodes'));
  await waitFor('the first page', async () => (await page.locator('#nodes tbody tr').count()) === 50);
  assert.ok(Date.now() - started < 2000, `node list in ${Date.now() - started} ms`);
  assert.match(await text('#node-count'), /1–50 of 5000 matching \(5000 in all\)/);
  // NACKed first, with the client's words beside the symbol: readable without colour.
  assert.match(await text('#nodes tbody tr:first-child'), /✗ NACKed: crowd node \d+ refuses clusters/);
  assert.ok(asked.some((a) => a.path.startsWith('/api/v1/fleet/nodes?') && a.path.includes('limit=50')));
  await screenshot('nodes-5000');
  await page.fill('#node-filter input[name=q]', 'crowd-4321');
  await page.press('#node-filter input[name=q]', 'Enter');
  await waitFor('found', async () => /1–1 of 1 matching/.test(await text('#node-count')));
  assert.match(await text('#nodes tbody'), /crowd-4321 default 1 ✓ in sync grpc-ads envoy\/1\.40\.0/);
  await page.evaluate(() => (location.hash = '#/nodes?state=behind'));
  await waitFor('the behind ones', async () => /of 100 matching/.test(await text('#node-count')));
  assert.match(await text('#nodes tbody tr:first-child'), /◐ behind \d+[smh]/);
});

test('the node list refuses bad filters with a clear error, and takes a search of any length', async () => {
  const ask = (query: string) => asViewer(`fleet/nodes?${query}`);
  for (const [query, says] of [
    ['state=stuck', /state must be one of nacked, behind, in-sync/],
    ['version=latest', /version must be a version id/],
    ['version=1e9999', /version must be a version id/],
  ] as const) {
    const res = await ask(query);
    assert.is(res.status, 400, query);
    assert.match(((await res.json()) as { error: string }).error, says);
  }
  const long = await ask(`q=${'crowd-1'.repeat(2000)}&limit=99999`);
  assert.is(long.status, 200);
  const page = (await long.json()) as { total: number; limit: number };
  assert.equal([page.total, page.limit], [0, 500]);
});

test('keyboard: the views are reached with Tab and Enter, and the current one is marked', async () => {
  // A fresh document: Tab starts from its top (the token stays in the session).
  await page.goto(`http://127.0.0.1:${server.adminPort}/#/`);
  await page.reload();
  await page.locator('#groups').waitFor();
  let reached = false;
  for (let i = 0; i < 10 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.textContent === 'History');
  }
  assert.ok(reached, 'History reached by Tab');
  await page.keyboard.press('Enter');
  await waitFor('the history view', async () => (await page.locator('#history').count()) === 1);
  assert.is(await page.locator('nav.main a[aria-current=page]').innerText(), 'History');
});

test('a read-only token is offered no decision; an admin token is', async () => {
  await page.evaluate(() => (location.hash = '#/history'));
  await page.locator('#history tbody tr').first().waitFor();
  assert.is(await page.locator('#history button[data-action]').count(), 0);
  // A second version, so that the first can be rolled back to.
  const file = join(root, 'services', 'groups.yaml');
  writeFileSync(
    file,
    `${readFileSync(file, 'utf8')}\n# touched\n---\nkind: NodeGroup\nname: spare\nmatch: { cluster: spare }\n`,
  );
  await waitFor('version 2 applied', async () => (await fleet()).versionId === 2, 15_000);
  await page.goto(`http://127.0.0.1:${server.adminPort}/#token=${adminToken.token}`);
  await waitFor('admin', async () => (await text('#who')) === 'admin');
  await page.evaluate(() => (location.hash = '#/history'));
  await waitFor('two versions', async () => (await page.locator('#history tbody tr').count()) === 2, 15_000);
  assert.ok((await page.locator('#history tr[data-version="1"] button[data-action=rollback]').count()) === 1);
  assert.ok(
    (await page.locator('#history tr[data-version="1"] button[data-action=pin]').count()) > 1,
    'a pin per group',
  );
});

test.run();
