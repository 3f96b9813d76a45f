/**
 * The status page in a real headless Chromium (Debian's, driven by playwright-core) with real gRPC
 * xDS clients connected: each view with its key elements (the fleet at a glance, the node list and
 * a node's page, the rollout timeline, the history's diff of Envoy resources, push health, what is
 * served), through config changes, a config the clients refuse, and a staged rollout driven from
 * the page's own buttons. With FLEETXDS_SCREENSHOTS=<dir>, each view's screenshot is kept there
 * (docs/images holds the ones the documentation shows). The page at 5,000 streams:
 * status-page-scale.test.ts.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { docOf, editYamlDocs, type Doc } from '../helpers/yaml-edit.ts';
import { projectPath } from '../../src/shared/paths.ts';
import {
  startBackend,
  xdsBootstrap,
  xdsGreeterClient,
  type Backend,
  type GreeterClientHandle,
} from '../helpers/greeter.ts';
import { spawnServer, waitFor, type ServerProcess } from '../helpers/process.ts';
import { tempDir } from '../helpers/tree.ts';

createRequire(import.meta.url)('@grpc/grpc-js-xds').register();

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let root: string;
let server: ServerProcess;
let browser: Browser;
let page: Page;
let backend: Backend;
const clients: GreeterClientHandle[] = [];

function editGrpc(edit: (docs: Doc[]) => void): void {
  editYamlDocs(join(root, 'services', 'grpc.yaml'), edit);
}
const svc = (docs: Doc[], name: string) => docOf(docs, 'Service', name);

test.before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM} (apt-get install chromium)`);
  backend = await startBackend('A');
  root = tempDir('fleetxds-page-');
  cpSync(projectPath('config'), root, { recursive: true });
  editGrpc((docs) => {
    svc(docs, 'greeter-v1').endpoints = [{ address: `127.0.0.1:${backend.port}` }];
    svc(docs, 'greeter-v2').endpoints = [{ address: `127.0.0.1:${backend.port}` }];
  });
  server = await spawnServer(join(root, 'fleetxds.yaml'), { FLEETXDS_DATABASE: join(root, 'state', 'x.db') });
  for (const id of ['page-client-1', 'page-client-2']) {
    const c = xdsGreeterClient('greeter.internal:50051', xdsBootstrap(server.grpcPort, id));
    await c.sayHello('warm-up');
    clients.push(c);
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await browser.newPage();
  page.on('dialog', (d) => void d.accept()); // the confirmation of a decision
  await page.goto(`http://127.0.0.1:${server.adminPort}/`);
});

test.after(async () => {
  for (const c of clients) c.close();
  await browser?.close();
  await server?.stop('SIGKILL');
  await backend?.close();
});

async function text(selector: string): Promise<string> {
  return (await page.locator(selector).innerText()).replace(/\s+/g, ' ');
}

/** The view's screenshot: kept when FLEETXDS_SCREENSHOTS names a folder, else checked and dropped. */
async function screenshot(name: string): Promise<void> {
  const dir = process.env.FLEETXDS_SCREENSHOTS ?? tempDir();
  const file = join(dir, `status-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  assert.ok(readFileSync(file).length > 5000, `${name}: a screenshot with something in it`);
}

async function open(hash: string): Promise<void> {
  await page.evaluate((h) => (location.hash = h), hash);
}

test('the fleet at a glance: the served version, each group with its proxies by state, transport and client', async () => {
  await open('#/');
  await waitFor('version shown', async () => /Serving version 1, applied/.test(await text('.headline')));
  await waitFor('both clients in sync', async () =>
    /2 proxies: ✓ in sync 2/.test(await text('[data-group="default"]')),
  );
  const group = await text('[data-group="default"]');
  assert.match(group, /version 1/);
  assert.match(group, /transports: grpc-ads 2/);
  assert.match(group, /clients: gRPC Node Pure JS\/\S+ 2/);
  // Groups with no proxy are shown as such.
  assert.match(await text('[data-group="edge"]'), /no proxy connected/);
  assert.is(await text('#problems'), '✓ none');
  await screenshot('fleet');
});

test('the node list: searched and filtered by the server, a badge per node, a page per node', async () => {
  await open('#/nodes');
  await waitFor('nodes listed', async () => (await page.locator('#nodes tbody tr').count()) === 2);
  assert.match(await text('#nodes'), /page-client-1 default 1 ✓ in sync grpc-ads gRPC Node Pure JS/);
  assert.match(await text('#node-count'), /1–2 of 2 matching \(2 in all\)/);
  await page.fill('#node-filter input[name=q]', 'CLIENT-2');
  await page.press('#node-filter input[name=q]', 'Enter');
  await waitFor('one match', async () => (await page.locator('#nodes tbody tr').count()) === 1);
  assert.match(await text('#nodes tbody'), /page-client-2/);
  assert.match(page.url(), /#\/nodes\?q=CLIENT-2/, 'the filter is in the address');
  await page.selectOption('#node-filter select[name=state]', 'nacked');
  await waitFor('no NACKed node', async () => /none of 2 match/.test(await text('#node-count')));
  await open('#/nodes');
  await waitFor('all again', async () => (await page.locator('#nodes tbody tr').count()) === 2);
  await screenshot('nodes');
  await page.locator('#nodes a', { hasText: 'page-client-1' }).click();
  await waitFor('the node page', async () => /cluster in sync/.test(await text('#explain')));
  assert.match(await text('#node-view'), /group default · grpc-ads from 127\.0\.0\.1:\d+/);
  assert.is(await text('#nack-history'), 'none');
  assert.match(await text('#certificate'), /not mutual TLS/);
});

test('what is served: listeners by kind with TLS, passed-through names and protections', async () => {
  await open('#/served');
  await waitFor('listeners shown', async () => /orders-db/.test(await text('#listeners')));
  const rows = (await page.locator('#listeners tbody tr').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
  const find = (group: string, name: string) => rows.find((r) => r.startsWith(`${group} ${name} `));
  assert.is(find('edge', 'orders-db'), 'edge orders-db TCP 0.0.0.0:5432');
  assert.is(
    find('edge', 'edge-https'),
    'edge edge-https HTTP 0.0.0.0:8443 terminated partner.shop.example.com',
    'HTTPS with a name passed through',
  );
  assert.match(find('default', 'greeter.internal:50051') ?? '', /proxyless gRPC/);
  assert.is(await text('#certs'), 'no TLS listener');
  await screenshot('served');
});

test('after a config change: the new version, ACKed; the history diffs the Envoy resources of two versions', async () => {
  editGrpc((docs) => {
    svc(docs, 'greeter-v2').connectTimeout = '3s';
  });
  await open('#/');
  await waitFor('version 2 shown', async () => /Serving version 2/.test(await text('.headline')), 15_000);
  for (const c of clients) await c.sayHello('after-change');
  await waitFor('both in sync on 2', async () => /✓ in sync 2/.test(await text('[data-group="default"]')), 15_000);
  await open('#/history?a=1&b=2');
  await waitFor('the diff', async () => /group default/.test(await text('#diff')), 15_000);
  const diff = await text('#diff');
  assert.match(diff, /Version 1 → 2: Envoy resources per node group/);
  assert.match(diff, /~ cluster\/greeter-v2/);
  await page.locator('#diff li', { hasText: 'cluster/greeter-v2' }).locator('button').click();
  await waitFor('its line diff', async () => (await page.locator('#diff pre.diff .add').count()) > 0);
  assert.match(await text('#diff pre.diff .add'), /"connect_timeout": "3s"/);
  // No token configured: the caller is an admin, and the decisions are offered.
  assert.ok((await page.locator('#history button[data-action=rollback]').count()) > 0);
  await screenshot('history');
});

test('after a config the clients refuse: the problem first, the badge with the text, the node page', async () => {
  editGrpc((docs) => {
    svc(docs, 'greeter-v2').lb = 'least_request';
  });
  await open('#/');
  await waitFor('the NACK problem', async () => /refused their config/.test(await text('#problems')), 20_000);
  assert.match(
    await text('#problems li[data-kind=nack]'),
    /prox(y|ies) of default refused their config; newest: page-client-\d: .*unsupported lb_policy: LEAST_REQUEST/,
  );
  assert.match(await text('[data-group="default"]'), /✗ NACKed [12]/);
  await open('#/nodes?state=nacked');
  await waitFor('the NACKed nodes', async () => /unsupported lb_policy/.test(await text('#nodes')), 15_000);
  await page.locator('#nodes a', { hasText: 'page-client-1' }).click();
  await waitFor(
    'the explanation',
    async () => /cluster refused .*unsupported lb_policy: LEAST_REQUEST/.test(await text('#explain')),
    15_000,
  );
  await waitFor('its NACK history', async () =>
    /Cluster version \S+: .*LEAST_REQUEST/.test(await text('#nack-history')),
  );
  await screenshot('node');
});

test('a staged rollout: the timeline with selectors and progress, promoted from the page', async () => {
  writeFileSync(
    join(root, 'services', 'rollout.yaml'),
    'kind: Rollout\nname: staged\nstages:\n  - name: canary\n    select: { idPattern: "page-client-1" }\n' +
      '    gates: { soak: 10m }\nacceptUnauthenticatedNodes: true\n',
  );
  await open('#/');
  await waitFor('the policy applied', async () => /Serving version 4/.test(await text('.headline')), 15_000);
  editGrpc((docs) => {
    delete svc(docs, 'greeter-v2').lb;
    svc(docs, 'greeter-v2').connectTimeout = '4s';
  });
  await open('#/rollout');
  await waitFor(
    'rollout shown',
    async () => /Rollout 1: version 4 → 5, progressing/.test(await text('#rollout-view')),
    15_000,
  );
  for (const c of clients) await c.sayHello('during-rollout');
  const canary = () => text('#stages [data-stage=canary]');
  await waitFor('canary progress', async () => /1 of 1 ACKed \(100%; needs \d+%/.test(await canary()), 15_000);
  assert.match(await canary(), /ids page-client-1/);
  assert.match(await canary(), /soak: \d+s left/);
  assert.match(await text('#stages [data-stage=rest]'), /every proxy no earlier stage took/);
  assert.match(await text('#stages [data-stage=rest]'), /on the previous version/);
  await screenshot('rollout');
  // The node list by the version each node is served: the canary on 5, the rest on 4.
  await open('#/nodes?version=5');
  await waitFor('the canary on 5', async () => /1–1 of 1 matching/.test(await text('#node-count')));
  assert.match(await text('#nodes tbody'), /page-client-1 default \(stage canary\) 5 /);
  await open('#/nodes?version=4');
  await waitFor('the rest on 4', async () =>
    /page-client-2 default \(stage rest\) 4 /.test(await text('#nodes tbody')),
  );
  // The fleet view: from which version to which, and how many proxies hold each (page-client-2
  // refused version 4 in an earlier case: not in sync).
  await open('#/');
  await waitFor('the group card during the rollout', async () =>
    /rolling out 4 → 5: 1 proxy on 5, 0 on 4, 1 not in sync/.test(await text('[data-group=default]')),
  );
  await open('#/rollout');
  await page.locator('#rollout-actions button[data-verb=promote]').waitFor();
  await page.locator('#rollout-actions button[data-verb=promote]').click();
  await waitFor('promoted by the page', async () => /rollout-promote by/.test(await text('#rollout-events')), 15_000);
  await waitFor(
    'rest on the new version',
    async () => /on the new version/.test(await text('#stages [data-stage=rest]')),
    15_000,
  );
});

test('push health: latency, pushes and NACKs, connected proxies, for the last hour', async () => {
  await open('#/health');
  await waitFor('the plots', async () => (await page.locator('figure.plot').count()) === 3);
  assert.equal(await page.locator('figure.plot figcaption').allInnerTexts(), [
    'Push latency to ACK',
    'Pushes and NACKs per minute',
    'Connected proxies',
  ]);
  // Drawn from the server's figures: a line per series, and the minutes with traffic as a table.
  assert.ok((await page.locator('figure.plot path.line').count()) === 5);
  assert.ok((await page.locator('figure.plot path.line.s1').first().getAttribute('d'))!.startsWith('M'));
  assert.ok((await page.locator('#health-figures tr').count()) > 1);
  await screenshot('health');
});

test.run();
