/**
 * Rendered DiscoveryResponse files for Envoy's path-based subscriptions (docs/xds-protocol.md §6.4).
 */
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse as parseYaml } from 'yaml';
import { checkTree } from '../../src/compile/check-tree.ts';
import { FileRenderer } from '../../src/transports/files/file-renderer.ts';
import { groupDirName, inside, resourceFileName } from '../../src/transports/files/paths.ts';
import { NodeGroupResolver } from '../../src/model/node-groups.ts';
import type { PublishedConfig } from '../../src/snapshot/snapshot-cache.ts';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { startServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/process.ts';
import { BASE, diagnosticsOf, tempDir, writeTree } from '../helpers/tree.ts';

async function published(files: Record<string, string>): Promise<PublishedConfig> {
  const r = await checkTree(writeTree(files));
  assert.ok(r.config);
  return {
    versionId: 1,
    modelHash: 'm',
    treeHash: r.treeHash,
    appliedAt: '',
    groups: r.config.groups,
    resolver: r.config.resolver ?? new NodeGroupResolver([]),
  };
}

function readResponse(path: string): any {
  const text = readFileSync(path, 'utf8');
  const doc = path.endsWith('.yaml') ? parseYaml(text) : JSON.parse(text);
  const { issues } = encodeJson('envoy.service.discovery.v3.DiscoveryResponse', doc);
  assert.equal(issues, [], `${path} is not a valid DiscoveryResponse`);
  return doc;
}

test('files read back as DiscoveryResponses with the real protos; CDS/LDS full state, EDS/RDS one resource each', async () => {
  const out = tempDir();
  const app = await startServer(writeTree(BASE), { files: { dir: out } });
  try {
    await app.filesIdle();
    const g = join(out, 'default');
    const cds = readResponse(join(g, 'cds.json'));
    assert.equal(
      cds.resources.map((r: any) => r.name),
      ['api', 'web'],
    );
    assert.ok(cds.version_info);
    const lds = readResponse(join(g, 'lds.json'));
    assert.equal(
      lds.resources.map((r: any) => r.name),
      ['edge'],
    );
    for (const name of ['api', 'web']) {
      const eds = readResponse(join(g, 'eds', `${name}.json`));
      assert.is(eds.resources.length, 1);
      assert.is(eds.resources[0].cluster_name, name);
    }
    assert.is(readResponse(join(g, 'rds', 'edge.json')).resources[0].name, 'edge');
    // References point at files that exist.
    const edsPath = cds.resources[0].eds_cluster_config.eds_config.path_config_source.path;
    assert.is(edsPath, join(g, 'eds', 'api.json'));
    assert.ok(existsSync(edsPath));
    const rdsPath = lds.resources[0].filter_chains[0].filters[0].typed_config.rds.config_source.path_config_source.path;
    assert.ok(existsSync(rdsPath));
    // No temp files are left behind.
    assert.equal(
      readdirSync(g).filter((f) => f.startsWith('.')),
      [],
    );
  } finally {
    await app.close();
  }
});

test('a one-endpoint change rewrites only that endpoint file; a removed cluster loses its file', async () => {
  const out = tempDir();
  const r = new FileRenderer({ dir: out, format: 'json', layout: 'files' });
  const first = await r.render(await published(BASE));
  assert.is(first.written, 7); // cds, lds, rtds/fleetxds, rtds/fleetxds-overrides, eds/api, eds/web, rds/edge
  const cdsIno = statSync(join(out, 'default', 'cds.json')).ino;
  const second = await r.render(
    await published({ ...BASE, 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') }),
  );
  assert.equal({ written: second.written, removed: second.removed }, { written: 1, removed: 0 });
  assert.is(statSync(join(out, 'default', 'cds.json')).ino, cdsIno, 'CDS file untouched');
  const again = await new FileRenderer({ dir: out, format: 'json', layout: 'files' }).render(
    await published({ ...BASE, 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') }),
  );
  assert.is(again.written, 0, 'a fresh renderer compares with what is on disk');
  const third = await r.render(
    await published({ ...BASE, 'edge.yaml': BASE['edge.yaml']!.replace('  - to: web\n', '  - to: api\n') }),
  );
  assert.is(third.removed, 1);
  assert.not.ok(existsSync(join(out, 'default', 'eds', 'web.json')));
});

test('first write order: new endpoint files, then clusters, then listeners (make before break)', async () => {
  const out = tempDir();
  const r = new FileRenderer({ dir: out, format: 'json', layout: 'files' });
  await r.render(await published(BASE));
  const times = (f: string) => statSync(join(out, 'default', f)).mtimeMs;
  assert.ok(times('eds/api.json') <= times('cds.json'));
  assert.ok(times('cds.json') <= times('lds.json'));
  assert.ok(times('rds/edge.json') <= times('lds.json'));
});

test('a reader never sees a partial file while a writer loops', async () => {
  const out = tempDir();
  const r = new FileRenderer({ dir: out, format: 'json', layout: 'files' });
  const big = (n: number) => ({
    ...BASE,
    'many.yaml':
      Array.from(
        { length: 200 },
        (_, i) => `kind: Service\nname: s${i}\nendpoints: [{ address: 10.1.${n % 250}.${i % 250}:80 }]\n`,
      ).join('---\n') +
      `---\nkind: Listener\nname: l2\nport: 9000\nvirtualHosts: [v2]\n---\nkind: VirtualHost\nname: v2\ndomains: [x]\nroutes:\n` +
      Array.from({ length: 200 }, (_, i) => `  - { match: { prefix: /s${i} }, to: s${i} }\n`).join(''),
  });
  const configs = [await published(big(1)), await published(big(2))];
  await r.render(configs[0]!);
  const file = join(out, 'default', 'cds.json');
  // The reader reads until the writer is done (a stop file), however slow the machine is.
  const stop = join(tempDir(), 'stop');
  const reader = spawn(process.execPath, [
    '-e',
    `
    const fs = require('fs'); let ok = 0, bad = 0; console.log('reading');
    while (!fs.existsSync(${JSON.stringify(stop)})) {
      try { JSON.parse(fs.readFileSync(${JSON.stringify(file)}, 'utf8')); ok++; } catch (e) { bad++; }
    }
    console.log(JSON.stringify({ ok, bad }));`,
  ]);
  let text = '';
  reader.stdout.on('data', (d) => (text += d));
  const done = new Promise((res) => reader.on('close', res));
  await waitFor('the reader reading', () => text.startsWith('reading'), 10_000, 10);
  let writes = 0;
  for (let i = 1; i <= 10; i++) writes += (await r.render(configs[i % 2]!)).written > 0 ? 1 : 0;
  writeFileSync(stop, '');
  await done;
  const { ok, bad } = JSON.parse(text.split('\n')[1]!);
  assert.is(writes, 10, 'every render wrote the file');
  assert.ok(ok > 0, `reader read (${ok})`);
  assert.is(bad, 0, 'partial or missing file seen');
});

test('watched_directory layout: every version in its own folder, switched by one symlink rename', async () => {
  const out = tempDir();
  const r = new FileRenderer({ dir: out, format: 'yaml', layout: 'watched_directory' });
  await r.render(await published(BASE));
  const g = join(out, 'default');
  const v1 = readlinkSync(join(g, 'current'));
  assert.ok(lstatSync(join(g, 'current')).isSymbolicLink());
  const cds = readResponse(join(g, 'current', 'cds.yaml'));
  const src = cds.resources[0].eds_cluster_config.eds_config.path_config_source;
  assert.equal(src, { path: join(g, 'current', 'eds', 'api.yaml'), watched_directory: { path: g } });
  await r.render(
    await published({ ...BASE, 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.2:80') }),
  );
  const v2 = readlinkSync(join(g, 'current'));
  assert.is.not(v2, v1);
  await r.render(
    await published({ ...BASE, 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.3:80') }),
  );
  const dirs = readdirSync(g).filter((n) => n.startsWith('.v-'));
  assert.is(dirs.length, 2, 'the current and the previous version are kept');
  const unchanged = await r.render(
    await published({ ...BASE, 'services.yaml': BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.3:80') }),
  );
  assert.is(unchanged.written, 0);
});

test('secret files are owner-only; group and resource names cannot escape the output folder', async () => {
  assert.throws(() => groupDirName('../etc'), /refusing/);
  assert.throws(() => groupDirName('/abs'), /refusing/);
  assert.throws(() => groupDirName('..'), /refusing/);
  for (const evil of ['../../etc/passwd', '..', '.', 'a/b', '/abs', 'x\u0000y']) {
    const f = resourceFileName(evil);
    assert.not.ok(f.includes('/'), f);
    assert.not.ok(f.startsWith('.'), f);
    assert.not.ok(f.includes('\u0000'), f);
  }
  assert.is(resourceFileName('greeter.internal:50051'), 'greeter.internal%3A50051');
  assert.is.not(resourceFileName('a:b'), resourceFileName('a%3Ab'), 'encoding is injective');
  assert.throws(() => inside('/tmp/x', '../y'), /escapes/);
  // Group names come from NodeGroup documents, whose names cannot hold a path.
  const ds = await diagnosticsOf({ ...BASE, 'g.yaml': 'kind: NodeGroup\nname: ../../etc\nmatch: { cluster: x }\n' });
  assert.ok(ds.some((d) => d.code === 'FXDS_SCHEMA' && d.path === 'name'));
});

test('one name rule: a node group named "a..b" is refused at validation, not by the renderer later', async () => {
  const ds = await diagnosticsOf({ ...BASE, 'groups.yaml': 'kind: NodeGroup\nname: a..b\nmatch: { cluster: x }\n' });
  assert.ok(
    ds.some((d) => d.code === 'FXDS_SCHEMA' && d.path === 'name' && /no "\.\."/.test(d.message)),
    JSON.stringify(ds),
  );
});

test('a group whose files cannot be written does not keep the others stale, and shows on the status API', async () => {
  const out = tempDir();
  // A file where the "edge" group's folder should be: that group cannot be rendered.
  writeTree({ edge: 'in the way\n' }, out);
  const tree = {
    ...BASE,
    'groups.yaml': 'kind: NodeGroup\nname: edge\nmatch: { cluster: edge }\n',
    'edge.yaml': BASE['edge.yaml']!.replace('port: 8080', 'port: 8080\ngroups: [default, edge]'),
  };
  const app = await startServer(writeTree(tree), { files: { dir: out } });
  try {
    await app.filesIdle();
    assert.ok(existsSync(join(out, 'default', 'cds.json')), 'the other group was rendered');
    const status = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/status`)).json()) as {
      fileFailures: { group: string; error: string }[];
    };
    assert.equal(
      status.fileFailures.map((f) => f.group),
      ['edge'],
    );
    assert.match(status.fileFailures[0]!.error, /EEXIST|ENOTDIR/);
  } finally {
    await app.close();
  }
});

test('temporary files a crash left behind are removed at start; rendered files stay', async () => {
  const out = tempDir();
  writeTree(
    {
      'default/.cds.json.4242.deadbeef.tmp': 'partial',
      'default/eds/.api.json.4242.0badf00d.tmp': 'partial',
      'default/keep.txt': 'not ours',
    },
    out,
  );
  const app = await startServer(writeTree(BASE), { files: { dir: out } });
  try {
    await app.filesIdle();
    assert.not.ok(existsSync(join(out, 'default', '.cds.json.4242.deadbeef.tmp')));
    assert.not.ok(existsSync(join(out, 'default', 'eds', '.api.json.4242.0badf00d.tmp')));
    assert.ok(existsSync(join(out, 'default', 'keep.txt')), 'other files are left alone');
    assert.ok(existsSync(join(out, 'default', 'cds.json')));
  } finally {
    await app.close();
  }
});

test.run();
