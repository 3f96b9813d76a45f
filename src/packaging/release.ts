/**
 * `npm run release` (after `npm run build`): a self-contained archive for linux-x64 and a Debian
 * package made from it, in release/. Inside, under lib/fleetxds, the project as the bundled server
 * expects to find it (dist/, proto/, migrations/, the JSON Schema, package.json) with production
 * dependencies only (better-sqlite3's prebuilt binary included) and the Envoy protos the server
 * loads (from @grpc/grpc-js-xds), plus the Node.js runtime the tests run on; bin/fleetxds on top;
 * share/ holds the systemd units, an example settings file and config tree, the docs, the licence
 * and the changelog. The target host needs no compiler, npm or network. SHA256SUMS beside them.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { projectPath } from '../shared/paths.ts';
import { SERVER_NODE_FLAGS } from '../shared/runtime-flags.ts';

const ARCH = 'linux-x64';

interface Manifest {
  version: string;
  commit: string;
  node: string;
}

/**
 * What of a production package the release carries: not its sources for a native build, its type
 * declarations, nor native builds for other platforms (better-sqlite3 ships eight).
 */
export function keptInRelease(file: string): boolean {
  const parts = file.split('/');
  const inPackage = (name: string) => parts.includes(name);
  if (/\.d\.[cm]?ts$/.test(file) || file.endsWith('.d.ts.map')) return false;
  if (inPackage('better-sqlite3')) {
    const at = parts.lastIndexOf('better-sqlite3');
    const top = parts[at + 1];
    if (top === 'deps' || top === 'src' || top === 'binding.gyp') return false;
    if (top === 'prebuilds' && parts.length > at + 2 && parts[at + 2] !== `${ARCH}.node`) return false;
    if (top === 'lib' && /^(darwin|win32|linuxmusl|linux-arm64)/.test(parts[at + 2] ?? '')) return false;
  }
  return true;
}

/** The folders of the production dependencies, as npm installed them. */
function productionPackages(root: string): string[] {
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  return out
    .split('\n')
    .filter((p) => p && p !== root)
    .map((p) => relative(root, p));
}

function gitCommit(root: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** bin/fleetxds: the command with the Node.js runtime the release ships, and the server's Node flags. */
export function releaseWrapper(): string {
  return `#!/bin/sh
# fleetxds with the Node.js runtime it ships with.
here=$(dirname "$(readlink -f "$0")")
lib="$here/../lib/fleetxds"
exec "$lib/node/bin/node" --enable-source-maps ${SERVER_NODE_FLAGS.join(' ')} "$lib/dist/server/main.js" "$@"
`;
}

/** The unit as installed: the packaged command, the paths the package creates. */
function installedUnit(text: string): string {
  return text.replace(
    /^ExecStart=\/usr\/bin\/node (?:--\S+ )*\/opt\/fleetxds\/dist\/server\/main\.js /m,
    'ExecStart=/usr/bin/fleetxds ',
  );
}

/**
 * `root`: the checkout to package (built already); another one than this (an earlier commit, for
 * the upgrade test) is packaged the same way, with this checkout's Node.js runtime.
 */
export function buildRelease(
  outDir = projectPath('release'),
  root = projectPath(),
  /** Another version than package.json's (the install test upgrades to a newer package). */
  version?: string,
): { archive: string; deb: string; sums: string; manifest: Manifest } {
  const at = (...parts: string[]) => join(root, ...parts);
  const pkg = JSON.parse(readFileSync(at('package.json'), 'utf8')) as { version: string };
  if (version) pkg.version = version;
  const nodeDir = projectPath('.node', '24');
  if (!existsSync(join(nodeDir, 'bin', 'node')))
    throw new Error('no Node.js 24 runtime in .node/24 (run bash .ci/node.sh node --version once)');
  if (!existsSync(at('dist', 'server', 'main.js'))) throw new Error('no dist/server: run npm run build first');
  const manifest: Manifest = {
    version: pkg.version,
    commit: gitCommit(root),
    node: execFileSync(join(nodeDir, 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim(),
  };
  const name = `fleetxds-${manifest.version}-${ARCH}`;
  const stage = join(outDir, name);
  rmSync(stage, { recursive: true, force: true });
  const lib = join(stage, 'lib', 'fleetxds');
  mkdirSync(lib, { recursive: true });
  for (const p of ['dist', 'proto', 'migrations', 'package.json', join('config', 'schema')])
    cpSync(at(p), join(lib, p), { recursive: true });
  rmSync(join(lib, 'dist', 'server'), { recursive: true, force: true });
  cpSync(at('dist', 'server'), join(lib, 'dist', 'server'), {
    recursive: true,
    filter: (src) => !src.endsWith('.map') || src.includes('main'),
  });
  writeFileSync(join(lib, 'dist', 'release.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // Production packages, and the protos the server loads (a development package of the project).
  const xds = join('node_modules', '@grpc', 'grpc-js-xds');
  for (const p of [...productionPackages(root), xds])
    cpSync(at(p), join(lib, p), {
      recursive: true,
      dereference: true,
      filter: (src) => keptInRelease(relative(root, src)),
    });
  cpSync(nodeDir, join(lib, 'node'), {
    recursive: true,
    filter: (src) => !src.startsWith(join(nodeDir, 'include')) && !src.startsWith(join(nodeDir, 'share')),
  });
  mkdirSync(join(stage, 'bin'));
  writeFileSync(join(stage, 'bin', 'fleetxds'), releaseWrapper());
  chmodSync(join(stage, 'bin', 'fleetxds'), 0o755);
  const share = join(stage, 'share', 'fleetxds');
  mkdirSync(join(share, 'systemd'), { recursive: true });
  for (const unit of ['fleetxds.service', 'fleetxds-register@.service'])
    if (existsSync(at('systemd', unit)))
      writeFileSync(join(share, 'systemd', unit), installedUnit(readFileSync(at('systemd', unit), 'utf8')));
  cpSync(at('config', 'services'), join(share, 'example', 'services'), { recursive: true });
  cpSync(at('config', 'tls'), join(share, 'example', 'tls'), { recursive: true });
  cpSync(at('config', 'fleetxds.yaml'), join(share, 'example', 'fleetxds.yaml'));
  cpSync(at('docs'), join(share, 'docs'), { recursive: true });
  cpSync(at('README.md'), join(share, 'docs', 'README.md'));
  // (An earlier commit packaged for the upgrade test may predate them.)
  for (const f of ['LICENSE', join('docs', 'changelog.md')])
    if (existsSync(at(f))) cpSync(at(f), join(share, basename(f)));
  mkdirSync(outDir, { recursive: true });
  const archive = join(outDir, `${name}.tar.gz`);
  execFileSync('tar', ['-C', outDir, '-czf', archive, name]);
  const deb = debianPackage(stage, outDir, manifest, at('config', 'fleetxds.yaml'));
  const sums = join(outDir, 'SHA256SUMS');
  writeFileSync(sums, [archive, deb].map((f) => `${sha256(f)}  ${basename(f)}\n`).join(''));
  return { archive, deb, sums, manifest };
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/**
 * The Debian package: the archive's tree with /usr as its prefix (/usr/bin/fleetxds,
 * /usr/lib/fleetxds, /usr/share/fleetxds), the units in /lib/systemd/system (installed, not
 * started), /etc/fleetxds/fleetxds.yaml as a conffile (kept across upgrades), the licence and
 * changelog in /usr/share/doc/fleetxds. The maintainer scripts create the system user and its
 * folders, restart a running server after an upgrade, stop and disable it on removal; purge leaves
 * /var/lib/fleetxds (history, pins, registrations) and says so.
 */
function debianPackage(stage: string, outDir: string, m: Manifest, settings: string): string {
  const root = join(outDir, `deb-${basename(stage)}`);
  rmSync(root, { recursive: true, force: true });
  const usr = join(root, 'usr');
  for (const part of ['bin', 'lib', 'share'])
    cpSync(join(stage, part), join(usr, part), { recursive: true, verbatimSymlinks: true });
  const doc = join(usr, 'share', 'doc', 'fleetxds');
  mkdirSync(doc, { recursive: true });
  for (const [from, to] of [
    ['LICENSE', 'copyright'],
    ['changelog.md', 'changelog.md'],
  ] as const)
    if (existsSync(join(stage, 'share', 'fleetxds', from)))
      cpSync(join(stage, 'share', 'fleetxds', from), join(doc, to));
  const units = join(root, 'lib', 'systemd', 'system');
  mkdirSync(units, { recursive: true });
  cpSync(join(stage, 'share', 'fleetxds', 'systemd'), units, { recursive: true });
  mkdirSync(join(root, 'etc', 'fleetxds'), { recursive: true });
  writeFileSync(
    join(root, 'etc', 'fleetxds', 'fleetxds.yaml'),
    readFileSync(settings, 'utf8')
      .replace(/^configDir: .*$/m, 'configDir: /etc/fleetxds/services')
      .replace(/^database: .*$/m, 'database: /var/lib/fleetxds/fleetxds.db')
      // Rendered files live with the state: /etc is read-only to the service.
      .replace(/^(\s+)dir: \.\.\/\.data\/envoy-files(.*)$/m, '$1dir: /var/lib/fleetxds/envoy-files$2'),
  );
  const debian = join(root, 'DEBIAN');
  mkdirSync(debian);
  const sizeKb = Math.ceil(duBytes(root) / 1024);
  writeFileSync(
    join(debian, 'control'),
    [
      'Package: fleetxds',
      `Version: ${m.version}`,
      'Architecture: amd64',
      'Maintainer: fleetxds <fleetxds@localhost>',
      `Installed-Size: ${sizeKb}`,
      'Depends: adduser',
      'Section: net',
      'Priority: optional',
      `Description: xDS configuration server for Envoy fleets on VMs (commit ${m.commit})`,
      ' Serves Envoy and proxyless gRPC clients from YAML service definitions kept in git.',
      '',
    ].join('\n'),
  );
  writeFileSync(join(debian, 'conffiles'), '/etc/fleetxds/fleetxds.yaml\n');
  const script = (name: string, body: string) => {
    writeFileSync(join(debian, name), `#!/bin/sh\nset -e\n${body}`);
    chmodSync(join(debian, name), 0o755);
  };
  const systemd = 'command -v systemctl >/dev/null && [ -d /run/systemd/system ]';
  script(
    'postinst',
    `if [ "$1" = configure ]; then
  # The state folder first: adduser then finds the home it is given.
  install -d -m 0750 /var/lib/fleetxds
  getent passwd fleetxds >/dev/null ||
    adduser --quiet --system --group --home /var/lib/fleetxds --no-create-home fleetxds
  chown fleetxds:fleetxds /var/lib/fleetxds
  install -d -m 0755 /etc/fleetxds/services
  # The settings may hold replica.token and the PostgreSQL URL: the service's group reads them, nobody else.
  chown root:fleetxds /etc/fleetxds/fleetxds.yaml
  chmod 0640 /etc/fleetxds/fleetxds.yaml
  if ${systemd}; then
    systemctl daemon-reload || true
    # An upgrade: a running server restarts on the new release (its state and settings stay).
    if [ -n "$2" ]; then systemctl try-restart fleetxds.service || true; fi
  fi
fi
`,
  );
  script(
    'prerm',
    `# Removal stops the server and its registrations and disables the unit; an upgrade keeps it running
# until postinst restarts it on the new release.
if [ "$1" = remove ] && ${systemd}; then
  systemctl stop fleetxds.service 'fleetxds-register@*.service' || true
  systemctl disable fleetxds.service || true
fi
`,
  );
  script(
    'postrm',
    `# The state directory (history, pins, registrations) stays; purge says what to delete.
if [ "$1" = remove ] && ${systemd}; then systemctl daemon-reload || true; fi
if [ "$1" = purge ]; then
  echo "fleetxds: /var/lib/fleetxds is kept; remove it by hand if it is not needed"
  # The config tree the operator put under /etc/fleetxds is theirs: dpkg keeps the folder, and says so.
  rmdir --ignore-fail-on-non-empty /etc/fleetxds/services /etc/fleetxds 2>/dev/null || true
fi
`,
  );
  const deb = join(outDir, `fleetxds_${m.version}_amd64.deb`);
  execFileSync('fakeroot', ['dpkg-deb', '-Zgzip', '--build', root, deb], { stdio: 'ignore' });
  rmSync(root, { recursive: true, force: true });
  return deb;
}

function duBytes(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

if (import.meta.main) {
  const r = buildRelease();
  const mb = (f: string) => `${(statSync(f).size / 1048576).toFixed(1)} MB`;
  process.stdout.write(
    `fleetxds ${r.manifest.version} (commit ${r.manifest.commit}, Node.js ${r.manifest.node})\n` +
      `  ${r.archive} ${mb(r.archive)}\n  ${r.deb} ${mb(r.deb)}\n  ${r.sums}\n`,
  );
}
