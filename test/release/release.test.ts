/**
 * The release as an operator gets it (`npm run release`, src/packaging/release.ts), tried as a person
 * would: the archive is unpacked into a scratch folder, `bin/fleetxds --version` names the version
 * and commit, `bin/fleetxds serve` runs from it (its own Node.js runtime; the checkout's
 * node_modules out of reach) with the example settings pointed at a scratch tree, and a real Envoy
 * bootstrapped by `bin/fleetxds bootstrap` routes a request to a backend. The Debian package is
 * unpacked with dpkg into a scratch root: its files, conffile, maintainer scripts, and the
 * installed unit passes `systemd-analyze verify`.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { basename, dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { currentRelease, type BuiltRelease } from '../helpers/release-build.ts';
import { startEnvoy, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { startHttpBackend, type Backend } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { tempDir, writeTree } from '../helpers/tree.ts';

let release: BuiltRelease;
let root: string;
let server: ChildProcess | undefined;
let envoy: EnvoyProcess | undefined;
let backend: Backend;

test.before(async () => {
  release = await currentRelease();
  root = tempDir('fleetxds-unpacked-');
  execFileSync('tar', ['-C', root, '-xzf', release.archive]);
  root = join(root, `fleetxds-${release.manifest.version}-linux-x64`);
  backend = await startHttpBackend('released');
});

test.after(async () => {
  await envoy?.stop();
  server?.kill('SIGTERM');
  backend?.server.close();
});

const fleetxds = () => join(root, 'bin', 'fleetxds');

test('the archive holds the runtime, the server, the units, the example and the docs; --version names the commit', () => {
  for (const p of [
    'lib/fleetxds/node/bin/node',
    'lib/fleetxds/dist/server/main.js',
    'lib/fleetxds/dist/proto/envoy.json',
    'lib/fleetxds/migrations/0012_registrations.sql',
    'lib/fleetxds/node_modules/better-sqlite3/package.json',
    'lib/fleetxds/config/schema/fleetxds.schema.json',
    'share/fleetxds/systemd/fleetxds.service',
    'share/fleetxds/systemd/fleetxds-register@.service',
    'share/fleetxds/example/fleetxds.yaml',
    'share/fleetxds/example/services/edge.yaml',
    'share/fleetxds/docs/README.md',
    'share/fleetxds/LICENSE',
    'share/fleetxds/changelog.md',
    'share/fleetxds/example/tls',
  ])
    assert.ok(existsSync(join(root, p)), p);
  assert.not.ok(existsSync(join(root, 'lib/fleetxds/node_modules/typescript')), 'no development packages');
  // One native build (this platform's), no sources to build one, no type declarations.
  const sqlite = join(root, 'lib/fleetxds/node_modules/better-sqlite3');
  assert.equal(readdirSync(join(sqlite, 'prebuilds')), ['linux-x64.node']);
  assert.not.ok(existsSync(join(sqlite, 'deps')), 'no SQLite sources');
  const declarations = execFileSync('find', [join(root, 'lib'), '-name', '*.d.ts'], { encoding: 'utf8' }).trim();
  assert.is(declarations, '', 'no type declarations');
  // The checksums beside the archive and the package are theirs.
  const sums = readFileSync(release.sums, 'utf8');
  const r = spawnSync('sha256sum', ['-c', release.sums], { cwd: dirname(release.sums), encoding: 'utf8' });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(sums, new RegExp(`  ${basename(release.archive)}\\n.*  ${basename(release.deb)}\\n$`));
  const v = execFileSync(fleetxds(), ['--version'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } }).trim();
  assert.is(
    v,
    `fleetxds ${release.manifest.version} (commit ${release.manifest.commit}, Node.js ${release.manifest.node})`,
  );
});

test('served from the unpacked archive with the example settings, a real Envoy routes through it', async () => {
  const work = tempDir('fleetxds-released-run-');
  const envoyPort = await freePort();
  const tree = writeTree({
    'site.yaml': `kind: Service
name: web
endpoints: [{ address: 127.0.0.1:${backend.port} }]
---
kind: VirtualHost
name: site
domains: ["*"]
routes: [{ to: web }]
---
kind: Listener
name: web
address: 127.0.0.1
port: ${envoyPort}
virtualHosts: [site]
`,
  });
  const [grpcPort, adminPort, restPort] = [await freePort(), await freePort(), await freePort()];
  const settings = readFileSync(join(root, 'share/fleetxds/example/fleetxds.yaml'), 'utf8')
    .replace(/^configDir: .*$/m, `configDir: ${tree}`)
    .replace(/^database: .*$/m, `database: ${join(work, 'fleetxds.db')}`)
    .replace(/127\.0\.0\.1:18000/g, `127.0.0.1:${grpcPort}`)
    .replace(/127\.0\.0\.1:18001/g, `127.0.0.1:${adminPort}`)
    .replace(/127\.0\.0\.1:18002/g, `127.0.0.1:${restPort}`)
    .replace(/^( {2}dir: ).*$/m, `$1${join(work, 'files')}`);
  writeFileSync(join(work, 'fleetxds.yaml'), settings);
  // The checkout is out of reach: the release runs from its own folder with its own runtime.
  server = spawn(fleetxds(), ['serve', '--config', join(work, 'fleetxds.yaml')], {
    cwd: work,
    env: { PATH: '/usr/bin:/bin' },
    stdio: 'ignore',
  });
  await waitFor(
    'the released server answers',
    async () => {
      const r = await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => undefined);
      return r?.status === 200;
    },
    30_000,
  );
  const bootstrap = JSON.parse(
    execFileSync(
      fleetxds(),
      [
        'bootstrap',
        '--config',
        join(work, 'fleetxds.yaml'),
        '--group',
        'default',
        '--mode',
        'ads',
        '--node-id',
        'released-1',
      ],
      { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } },
    ),
  ) as object;
  envoy = await startEnvoy('1.40', bootstrap, tempDir());
  const get = () =>
    new Promise<string>((resolve, reject) =>
      http
        .get({ host: '127.0.0.1', port: envoyPort, path: '/', agent: false }, (res) => {
          let b = '';
          res.setEncoding('utf8').on('data', (d: string) => (b += d));
          res.on('end', () => resolve(b));
        })
        .on('error', reject),
    );
  await waitFor('Envoy routes to the backend', async () => (await get().catch(() => '')) === 'released', 30_000);
  assert.is(await envoy.rejected(), 0);
});

test('the Debian package: files, the conffile, maintainer scripts, and a unit systemd-analyze accepts', () => {
  const scratch = tempDir('fleetxds-deb-');
  execFileSync('dpkg-deb', ['-x', release.deb, scratch]);
  const control = tempDir('fleetxds-deb-control-');
  execFileSync('dpkg-deb', ['-e', release.deb, control]);
  assert.is(readFileSync(join(control, 'conffiles'), 'utf8'), '/etc/fleetxds/fleetxds.yaml\n');
  assert.match(readFileSync(join(control, 'postinst'), 'utf8'), /adduser --quiet --system/);
  assert.match(readFileSync(join(control, 'control'), 'utf8'), new RegExp(`Version: ${release.manifest.version}`));
  const settings = readFileSync(join(scratch, 'etc/fleetxds/fleetxds.yaml'), 'utf8');
  assert.match(settings, /database: \/var\/lib\/fleetxds/);
  assert.match(settings, /^ {2}dir: \/var\/lib\/fleetxds\/envoy-files\b/m, 'rendered files under the state, not /etc');
  assert.not.match(settings, /\.\.\/\.data/);
  // The settings may hold the replica token and the PostgreSQL URL: root and the service's group only.
  const postinst = readFileSync(join(control, 'postinst'), 'utf8');
  assert.match(postinst, /chown root:fleetxds \/etc\/fleetxds\/fleetxds\.yaml/);
  assert.match(postinst, /chmod 0640 \/etc\/fleetxds\/fleetxds\.yaml/);
  // The register unit's dynamic user gets its key or token as a credential, not a world-readable file.
  const register = readFileSync(join(scratch, 'lib/systemd/system/fleetxds-register@.service'), 'utf8');
  assert.match(register, /^LoadCredential=secret:\/etc\/fleetxds\/register\/%i\.secret$/m);
  const unit = readFileSync(join(scratch, 'lib/systemd/system/fleetxds.service'), 'utf8');
  assert.match(unit, /^ExecStart=\/usr\/bin\/fleetxds serve /m);
  for (const f of [
    'usr/lib/fleetxds/dist/server/main.js',
    'usr/share/fleetxds/example/tls',
    'usr/share/doc/fleetxds/copyright',
    'usr/share/doc/fleetxds/changelog.md',
  ])
    assert.ok(existsSync(join(scratch, f)), f);
  assert.not.ok(existsSync(join(scratch, 'opt')), 'nothing under /opt, which no package owns');
  // verify resolves ExecStart= on the host: point it at the scratch root's command.
  const checked = join(tempDir(), 'fleetxds.service');
  writeFileSync(
    checked,
    unit
      .replace('/usr/bin/fleetxds', join(scratch, 'usr/bin/fleetxds'))
      .replace(/^User=.*$/m, 'User=root')
      .replace(/^Group=.*$/m, ''),
  );
  const r = spawnSyncText('systemd-analyze', ['verify', checked]);
  assert.is(r.status, 0, r.output);
});

function spawnSyncText(cmd: string, args: string[]): { status: number | null; output: string } {
  try {
    const output = execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, output };
  } catch (err) {
    const e = err as { status: number | null; stdout?: string; stderr?: string };
    return { status: e.status, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

test.run();
