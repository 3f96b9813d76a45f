/**
 * The status page in a real headless Chromium (Debian's, driven by playwright-core): after a
 * config change it shows the new version and the ACKs of connected real gRPC xDS clients; after a
 * config the clients reject, it shows their NACK text.
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

test('shows the served version, the rollout and the connected clients', async () => {
  await waitFor('version shown', async () => /version 1 applied/.test(await text('#version')));
  await waitFor('both clients in the rollout', async () => /2 of 2 nodes ACKed/.test(await text('#rollout')));
  const nodes = await text('#nodes');
  assert.match(nodes, /page-client-1/);
  assert.match(nodes, /page-client-2/);
  assert.match(nodes, /gRPC Node Pure JS/);
  assert.is(await text('#staged'), 'none', 'no staged rollout');
});

test("lists each group's listeners by kind, with TLS, passed-through names and protections", async () => {
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
});

test("the config tree's reads and fleetxds's certificates", async () => {
  await waitFor('tree shown', async () => (await text('#tree')) === 'read');
  assert.is(await text('#certs'), 'no TLS listener');
  // The lines for what this server does not have (TLS) or cannot make happen here (a tree that cannot
  // be read; the API side is tested in read-failures and listener-certificates), drawn by the page.
  // Given as source: tsx would wrap a function's inner closures in a helper the page does not have.
  const drawn = await page.evaluate<[string, string][]>(`(() => {
    const cert = (days) => certLine({
      listener: 'grpc',
      subject: 'CN=xds.internal',
      fingerprint: 'AB:CD',
      notAfter: new Date(Date.now() + days * 86400000 + 60000).toISOString(),
    });
    const tree = treeLine({
      since: '2026-11-25T01:00:00.000Z',
      failedReads: 3,
      reason: 'services/a.yaml: EMFILE',
      nextReadAt: '2026-11-25T01:00:07.000Z',
    });
    return [tree, cert(40), cert(3), cert(-2)].map((e) => [e.className, e.textContent]);
  })()`);
  assert.equal(drawn[0], [
    'bad',
    'could not be read completely since 2026-11-25T01:00:00.000Z (3 reads): services/a.yaml: EMFILE; the last ' +
      'good version is served; next read at 2026-11-25T01:00:07.000Z',
  ]);
  assert.equal(
    drawn.slice(1).map(([cls]) => cls),
    ['ok', 'warn', 'bad'],
  );
  assert.match(drawn[1]![1], /^grpc: CN=xds.internal, expires \S+ \(in 40 days\), sha256 AB:CD$/);
  assert.match(drawn[3]![1], /^grpc: CN=xds.internal, expired at /);

  // Each node's client certificate (mTLS; these clients have none), amber under 14 days, red once expired.
  const clientCells = await page.evaluate<[string | null, string][]>(`(() => {
    const cell = (days) => clientCertCell({
      names: 'URI:spiffe://fleet.example/node/edge-*',
      fingerprint: '0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7',
      notAfter: new Date(Date.now() + days * 86400000 + 60000).toISOString(),
    });
    return [cell(40), cell(3), cell(-2)].map((e) => [e.className, e.textContent]).concat([[null, clientCertCell()]]);
  })()`);
  assert.equal(
    clientCells.map(([cls]) => cls),
    ['ok', 'warn', 'bad', null],
  );
  assert.match(
    clientCells[0]![1],
    /^URI:spiffe:\/\/fleet.example\/node\/edge-\*, expires \S+ \(in 40 days\), sha256 0A:1B:2C:3D:4E:5F:60:71\.\.\.$/,
  );
  assert.is(clientCells[3]![1], '-', 'none without mTLS');
  assert.match(await text('#nodes'), /client certificate/, 'the column');
});

test('after a config change: the new version and the ACKs of the clients', async () => {
  editGrpc((docs) => {
    svc(docs, 'greeter-v2').connectTimeout = '3s';
  });
  await waitFor('version 2 shown', async () => /version 2 applied/.test(await text('#version')), 15_000);
  for (const c of clients) await c.sayHello('after-change');
  const cdsRow = async () =>
    (await page.locator('#rollout tbody tr', { hasText: 'Cluster' }).first().innerText()).replace(/\s+/g, ' ');
  await waitFor('ACKs of version 2', async () => /2 of 2 nodes ACKed/.test(await cdsRow()), 15_000);
  const served = await (await fetch(`http://127.0.0.1:${server.adminPort}/api/v1/config`)).json();
  assert.ok((await cdsRow()).includes(served.groups.default.cluster.version), 'the row shows the new cluster version');
});

test('after a config the clients reject: the NACK text', async () => {
  editGrpc((docs) => {
    svc(docs, 'greeter-v2').lb = 'least_request';
  });
  await waitFor('NACK shown', async () => /unsupported lb_policy: LEAST_REQUEST/.test(await text('#nodes')), 20_000);
  await waitFor('NACK counted', async () => /Cluster \S+ .* of 2 nodes ACKed 2/.test(await text('#rollout')), 20_000);
  // A node's explanation, on a click: the refused cluster version, with the client's own text.
  await page.locator('#nodes button', { hasText: 'page-client-1' }).click();
  await waitFor(
    'the explanation',
    async () => /cluster refused: .*unsupported lb_policy: LEAST_REQUEST/.test(await text('#explain')),
    15_000,
  );
  assert.match(await text('#explain'), /^node page-client-1: group default, connected \(grpc-ads\)/);
  const shot = process.env.STATUS_SCREENSHOT ?? join(tempDir(), 'status.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(readFileSync(shot).length > 1000);
});

test('a staged rollout: the stage line with its progress, each node with its stage', async () => {
  writeFileSync(
    join(root, 'services', 'rollout.yaml'),
    'kind: Rollout\nname: staged\nstages:\n  - name: canary\n    select: { idPattern: "page-client-1" }\n' +
      '    gates: { soak: 10m }\nacceptUnauthenticatedNodes: true\n',
  );
  await waitFor('the policy applied', async () => /version 4 applied/.test(await text('#version')), 15_000);
  editGrpc((docs) => {
    delete svc(docs, 'greeter-v2').lb;
    svc(docs, 'greeter-v2').connectTimeout = '4s';
  });
  await waitFor('rollout shown', async () => /rollout #1: progressing/.test(await text('#staged')), 15_000);
  for (const c of clients) await c.sayHello('during-rollout');
  await waitFor(
    'canary progress',
    async () => /canary: 1 node on version 5, 1 ACKed, soaking/.test(await text('#staged')),
    15_000,
  );
  assert.match(await text('#staged'), /rest: 1 node on version 4/);
  assert.match(await text('#nodes'), /default \(stage canary\)/);
  assert.match(await text('#nodes'), /default \(stage rest\)/);
  // The node in the later stage stays on version 4, whose clusters it refused: both rules, in order.
  await page.locator('#nodes button', { hasText: 'page-client-2' }).click();
  await waitFor(
    'the stage explained',
    async () =>
      /cluster refused: .*rollout #1: stage "rest" is not promoted yet, so it stays on version 4 .*; the node refused/.test(
        await text('#explain'),
      ),
    15_000,
  ).catch(async (err) => {
    throw new Error(`${(err as Error).message}: ${await text('#explain')}`);
  });
});

test.run();
