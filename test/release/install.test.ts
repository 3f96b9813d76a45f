/**
 * The Debian package as an operator installs it, in a throwaway copy of this machine
 * (test/helpers/install-sandbox.ts: its own mounts, network and processes, as root): every
 * `<!-- run: package -->` block of the docs, page by page, as written. That is getting-started
 * (checksums, install, the example tree copied as documented, the unit started the way systemd
 * starts it from its unit file: user, umask, environment, a read-only / but for its state, notify
 * readiness; a real Envoy 1.40 of the edge group routing to the example's storefront; git push
 * deployment, a refused push), operating (history, diff, rollback, pins), troubleshooting, and
 * upgrading (a newer package over it keeping the state and restarting the server; removal and
 * purge). Then what the pages only say: nothing runs after removal, the unit is disabled, the
 * package's files are gone, the state stays, and no step printed a warning.
 *
 * What the sandbox does not cover: systemd itself (units run from their files by
 * test/helpers/fake-systemctl.py; seccomp filters, capability bounds and namespace restrictions of
 * the unit are not applied, systemd-analyze verify checks them), and a distribution without Python.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { currentRelease } from '../helpers/release-build.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { sessionScript, sessionsOf } from '../helpers/doc-blocks.ts';
import { envoyBinary } from '../helpers/envoy.ts';
import { InstallSandbox } from '../helpers/install-sandbox.ts';
import { tempDir } from '../helpers/tree.ts';

let sandbox: InstallSandbox | undefined;
let version: string;
let newer: string;
let archive: string;
let releaseDir: string;

/** The same package under the next patch version: what an upgrade installs over it. */
function nextPackage(deb: string, dir: string, next: string): string {
  const root = tempDir('fleetxds-next-');
  execFileSync('dpkg-deb', ['-R', deb, root]);
  const control = join(root, 'DEBIAN', 'control');
  writeFileSync(control, readFileSync(control, 'utf8').replace(/^Version: .*$/m, `Version: ${next}`));
  const manifest = join(root, 'usr', 'lib', 'fleetxds', 'dist', 'release.json');
  const m = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  writeFileSync(manifest, `${JSON.stringify({ ...m, version: next }, null, 2)}\n`);
  const file = join(dir, `fleetxds_${next}_amd64.deb`);
  execFileSync('fakeroot', ['dpkg-deb', '-Zgzip', '--build', root, file], { stdio: 'ignore' });
  return file;
}

/** Stand-ins for the example's storefront endpoints (10.0.1.10 and .11:8080), inside the sandbox. */
const STOREFRONT = `
import http.server, socketserver, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok" if self.path == "/healthz" else b"the storefront's page"
        self.send_response(200); self.send_header("content-length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
# Beside Envoy's listener on 0.0.0.0:8080 (Envoy binds with SO_REUSEPORT; the kernel gives a
# connection to 10.0.1.10:8080 to the socket bound to that address).
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer.allow_reuse_port = True
for ip in sys.argv[1:]:
    s = socketserver.ThreadingTCPServer((ip, 8080), H)
    threading.Thread(target=s.serve_forever, daemon=True).start()
threading.Event().wait()
`;

test.before(async () => {
  const built = await currentRelease();
  // The packages in a folder of this test's own: the checksums and a newer package are written beside them.
  const dir = tempDir('fleetxds-install-');
  releaseDir = dir;
  for (const f of [built.archive, built.deb]) copyFileSync(f, join(dir, basename(f)));
  const release = { ...built, archive: join(dir, basename(built.archive)), deb: join(dir, basename(built.deb)) };
  version = release.manifest.version;
  newer = version.replace(/(\d+)$/, (d) => String(Number(d) + 1));
  const next = nextPackage(release.deb, dir, newer);
  // The checksums of both packages, as a release page would list them.
  archive = release.archive;
  const sums = [release.archive, release.deb, next].map(
    (f) => `${execFileSync('sha256sum', [f], { encoding: 'utf8' }).split(' ')[0]}  ${basename(f)}\n`,
  );
  writeFileSync(join(dir, 'SHA256SUMS'), sums.join(''));
  sandbox = await InstallSandbox.create([dir]);
  const setup = await sandbox.run(`set -e
cp ${dir}/*.deb ${dir}/SHA256SUMS /root/
# The operator's Envoy and git identity, and the storefront the example routes to.
ln -sf ${envoyBinary('1.40')} /usr/local/bin/envoy
git config --global user.name "An Operator" && git config --global user.email ops@example.com
git config --global init.defaultBranch main
ip addr add 10.0.1.10/32 dev lo && ip addr add 10.0.1.11/32 dev lo
setsid python3 -c '${STOREFRONT.replace(/'/g, `'\\''`)}' 10.0.1.10 10.0.1.11 >/dev/null 2>&1 &
`);
  assert.is(setup.status, 0, setup.stdout + setup.stderr);
});

test.after(() => sandbox?.close());

const sessions = sessionsOf((b) => b.marker !== undefined && 'run' in b.marker && b.marker.run === 'package');

/** Runs one page's blocks in the sandbox, as one terminal session. */
async function runPage(page: string): Promise<string> {
  const session = sessions.find((s) => s.page === page);
  assert.ok(session, `no package blocks on ${page}`);
  const script = sessionScript(session.blocks).replaceAll('<new version>', newer).replaceAll('<version>', version);
  const r = await sandbox!.run(script, 300_000);
  assert.is(r.status, 0, `${page}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

test('every page with commands for the installed package is run, in this order', () => {
  assert.equal(
    sessions.map((s) => s.page),
    ['docs/getting-started.md', 'docs/operating.md', 'docs/troubleshooting.md', 'docs/upgrading.md'],
  );
});

test('getting started: installed, served, an Envoy routing, and git push deploying and refusing', async () => {
  const o = await runPage('docs/getting-started.md');
  assert.match(o, new RegExp(`fleetxds_${version.replaceAll('.', '\\.')}_amd64\\.deb: OK`));
  assert.match(o, new RegExp(`^fleetxds ${version.replaceAll('.', '\\.')} \\(commit \\w+, Node\\.js v24`, 'm'));
  assert.match(o, /Status: "serving version 1"/);
  assert.match(o, /\{"ready":true,"versionId":1\}/);
  assert.match(o, /301\n/, 'the edge listener redirects');
  assert.match(o, /the storefront's page/, 'routed to the storefront');
  assert.match(o, /^node edge-1: group edge, connected/m, o);
  assert.match(o, /^\* #2 .* git .*Say healthy/m);
  assert.match(o, /did you mean "catalog"\?/, 'the push of a typo is refused with the reason');
  // Nothing warns but git (cloning the empty repository) and the repository's hook (remote:): git
  // keeps no file modes but the executable bit, so the pushed key is deployed readable by others.
  const warnings = o
    .split('\n')
    .filter((l) => /warning/i.test(l))
    .filter((l) => !/^warning: You appear to have cloned an empty repository\.$|^remote: /.test(l));
  assert.equal(warnings, [], 'no step of the install warns (adduser, dpkg, systemctl)');
});

test('the service ran as the unit says: its user, a read-only /etc, its state where the unit puts it', async () => {
  const r = await sandbox!.run(`set -e
ps -o user= -p "$(cat /run/fake-systemd/fleetxds.service.pid)"
stat -c '%U %a' /var/lib/fleetxds /var/lib/fleetxds/fleetxds.db
grep -c '"level":[56]0' /run/fake-systemd/fleetxds.service.journal || true
grep -o 'EACCES[^"]*\\|EROFS[^"]*' /run/fake-systemd/fleetxds.service.journal || true
`);
  assert.is(r.status, 0, r.stderr);
  const [users, state, db, errors, denied = ''] = r.stdout.split('\n');
  const journal = await sandbox!.run('systemctl status fleetxds --no-pager; journalctl -u fleetxds -n 15');
  assert.is(users, 'fleetxds', `the server's processes run as: ${users}\n${journal.stdout}${journal.stderr}`);
  assert.is(state, 'fleetxds 750');
  assert.match(db!, /^fleetxds 6[04]0$/, 'UMask=0027: not readable by others');
  assert.is(errors, '0', 'no error or fatal line in its log');
  assert.is(denied, '', 'nothing it was refused (files.dir under /var/lib, not /etc)');
});

test('operating and troubleshooting: history, diff, rollback, pins; where to look', async () => {
  const o = await runPage('docs/operating.md');
  assert.match(o, /^ {2}~ route\//m, 'diff shows a changed route');
  assert.match(o, /rolled back to version 1 \(serving version \d+\)/);
  assert.match(o, /pinned edge to version 2/);
  const t = await runPage('docs/troubleshooting.md');
  assert.match(t, /Status: "serving version \d+"/);
  assert.match(t, /"problems":\[/);
});

test('upgraded with its state, then removed and purged clean', async () => {
  const o = await runPage('docs/upgrading.md');
  assert.match(o, new RegExp(`^fleetxds ${newer.replaceAll('.', '\\.')} `, 'm'));
  assert.match(o, /Status: "serving version \d+"/);
  assert.match(o, /fleetxds: \/var\/lib\/fleetxds is kept/);
  // The one thing dpkg leaves is the operator's config tree, and it says so.
  const warnings = o.split('\n').filter((l) => /warning/i.test(l));
  assert.equal(warnings, [
    "dpkg: warning: while removing fleetxds, directory '/etc/fleetxds' not empty so not removed",
  ]);
  const r = await sandbox!.run(`
pgrep -fa '[d]ist/server/main.js serve' || echo "no server"
ls /etc/systemd/system/multi-user.target.wants/ 2>/dev/null | grep fleetxds || echo "not enabled"
ls /usr/lib/fleetxds /usr/bin/fleetxds /etc/fleetxds/fleetxds.yaml 2>&1 | grep -c 'No such file'
ls /var/lib/fleetxds/fleetxds.db
`);
  assert.equal(r.stdout.trim().split('\n'), ['no server', 'not enabled', '3', '/var/lib/fleetxds/fleetxds.db']);
});

test('the archive alone, on a machine whose own Node.js is older: the docs commands for it run as written', async () => {
  const blocks = sessionsOf((b) => b.marker !== undefined && 'run' in b.marker && b.marker.run === 'archive');
  assert.equal(
    blocks.map((b) => b.page),
    ['docs/operating.md'],
  );
  const machine = await InstallSandbox.create([releaseDir]);
  try {
    const node = await machine.run('/usr/bin/node --version');
    assert.match(
      node.stdout,
      /^v(1\d|20|21)\./,
      `this machine's own Node.js is older than the one fleetxds needs: ${node.stdout}`,
    );
    const script = sessionScript(blocks[0]!.blocks).replaceAll('<version>', version);
    const r = await machine.run(`cp ${releaseDir}/${basename(archive)} ${releaseDir}/SHA256SUMS /root/ && ${script}`);
    assert.is(r.status, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      new RegExp(`^fleetxds ${version.replaceAll('.', '\\.')} \\(commit \\w+, Node\\.js v24`, 'm'),
    );
    assert.match(r.stdout, /services: valid/);
  } finally {
    machine.close();
  }
});

test('the docs that name the installed paths name what the package installs', () => {
  const text = readFileSync(projectPath('docs', 'getting-started.md'), 'utf8');
  assert.match(text, /\/usr\/share\/fleetxds\/example\/services\//);
  assert.not.match(readFileSync(projectPath('docs', 'operating.md'), 'utf8'), /\/opt\/fleetxds\/(dist|share)/);
});

test.run();
