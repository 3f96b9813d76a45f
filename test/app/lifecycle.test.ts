/**
 * The process lifecycle systemd sees: READY=1 only once serving, SIGHUP re-reads the directory,
 * SIGTERM drains (held REST polls answered, streams closed, database closed) and exits 0. A fake
 * NOTIFY_SOCKET (a Python datagram listener) stands in for systemd.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { projectPath } from '../../src/shared/paths.ts';
import { connect, T } from '../helpers/ads-client.ts';
import { spawnServer, waitFor } from '../helpers/process.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

function fakeSystemd(sock: string): { messages: () => string[]; stop: () => void } {
  const py = spawn('python3', [
    '-u',
    '-c',
    `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("listening", flush=True)
while True:
    data = s.recv(65536)
    print(data.decode().replace("\\n", " | "), flush=True)
`,
    sock,
  ]);
  let out = '';
  py.stdout.on('data', (d) => (out += d));
  return { messages: () => out.split('\n').filter((l) => l && l !== 'listening'), stop: () => py.kill('SIGKILL') };
}

test('READY after serving, SIGHUP reload, SIGTERM drain with exit 0; systemd-analyze accepts the unit', async () => {
  const dir = writeTree(BASE);
  const sock = join(tempDir(), 'notify.sock');
  const systemd = fakeSystemd(sock);
  await waitFor('fake systemd', () => spawnSync('test', ['-S', sock]).status === 0, 5000, 50);
  const db = join(tempDir(), 'x.db');
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${dir}\ndatabase: ${db}\ngrpc: { listen: 127.0.0.1:0 }\nadmin: { listen: 127.0.0.1:0 }\nrest: { ` +
      `listen: 127.0.0.1:0, holdMs: 20000, requestTimeoutMs: 30000 }\nwatch: { enabled: false }\nlog: { level: ` +
      `info }\n`,
  );
  const server = await spawnServer(settings, { NOTIFY_SOCKET: sock });
  try {
    await waitFor('READY=1', () => systemd.messages().some((m) => m.includes('READY=1')));
    assert.match(
      systemd.messages().find((m) => m.includes('READY=1'))!,
      /STATUS=serving version 1/,
    );
    // SIGHUP: re-read the directory (the watcher is off here, so only the reload can apply it).
    writeFileSync(join(dir, 'services.yaml'), BASE['services.yaml']!.replace('10.0.1.1:80', '10.0.1.9:80'));
    server.child.kill('SIGHUP');
    await waitFor('reloaded', async () => (await server.admin('/api/v1/config')).versionId === 2);
    assert.ok(systemd.messages().some((m) => m.includes('RELOADING=1')));
    // A held REST poll (a long-polling proxy with nothing new) and an open ADS stream, then SIGTERM.
    const longPoller = { id: 'n', metadata: { fleetxds: { long_poll_ms: 60_000 } } };
    const first = await (
      await fetch(`http://127.0.0.1:${server.restPort}/v3/discovery:clusters`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ node: longPoller }),
      })
    ).json();
    let answered = false;
    const held = fetch(`http://127.0.0.1:${server.restPort}/v3/discovery:clusters`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ node: longPoller, version_info: first.version_info }),
    }).finally(() => (answered = true));
    const c = connect(server.grpcPort);
    const s = c.open();
    s.send({ node: { id: 'g', cluster: 'x' }, type_url: T.cluster });
    await s.next();
    await new Promise((r) => setTimeout(r, 300));
    assert.not.ok(answered, 'the poll is held until something changes');
    const stopped = Date.now();
    const exit = server.stop('SIGTERM');
    const res = await held;
    assert.is(res.status, 304, 'the held poll is answered, not dropped');
    assert.ok(Date.now() - stopped < 5000, 'at shutdown, not after its hold time (20 s)');
    const st = await s.status;
    assert.is(st.code, 14, 'the stream ends with UNAVAILABLE (Envoy reconnects with backoff)');
    assert.is(await exit, 0, 'clean exit');
    assert.ok(systemd.messages().some((m) => m.includes('STOPPING=1')));
    const check = new Database(db, { readonly: true });
    assert.is(check.pragma('integrity_check', { simple: true }), 'ok');
    check.close();
    c.close();
  } finally {
    systemd.stop();
    await server.stop('SIGKILL');
  }
  // The unit parses: systemd-analyze prints nothing for a clean unit (it only warns, so fail on any output).
  const verify = spawnSync(
    'systemd-analyze',
    ['verify', '--man=no', '--recursive-errors=no', projectPath('systemd', 'fleetxds.service')],
    { encoding: 'utf8' },
  );
  if (verify.error) throw new Error('systemd-analyze is not installed (apt-get install systemd)');
  // verify only warns (exit 0) on misspelled keys and bad values, so look at what it says.
  const problems = (verify.stdout + verify.stderr)
    .split('\n')
    .filter((l) => /Unknown key|Failed to parse|Invalid|unknown|bad unit file/i.test(l));
  assert.equal(problems, [], verify.stdout + verify.stderr);
  const text = (await import('node:fs')).readFileSync(projectPath('systemd', 'fleetxds.service'), 'utf8');
  assert.not.match(text, /^MemoryDenyWriteExecute\s*=\s*yes/m, 'MemoryDenyWriteExecute kills V8');
  // The compile cache must outlive the process (PrivateTmp empties /tmp at each start): a directory systemd keeps.
  const cacheDir = /^CacheDirectory=(\S+)/m.exec(text)?.[1];
  assert.match(text, new RegExp(`^Environment=NODE_COMPILE_CACHE=/var/cache/${cacheDir}/`, 'm'));
});

test('a server that has never served says why: /readyz, the log and the status line; a tree restored as served is no longer refused', async () => {
  const dir = writeTree({
    ...BASE,
    'broken.yaml': 'kind: VirtualHost\nname: broken\ndomains: [b.example]\nroutes: [{ to: nowhere }]\n',
  });
  const sock = join(tempDir(), 'notify.sock');
  const systemd = fakeSystemd(sock);
  await waitFor('fake systemd', () => spawnSync('test', ['-S', sock]).status === 0, 5000, 50);
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${dir}\ndatabase: ${join(tempDir(), 'x.db')}\ngrpc: { listen: 127.0.0.1:0 }\n` +
      `admin: { listen: 127.0.0.1:0 }\nwatch: { enabled: false }\nlog: { level: info }\n`,
  );
  const server = await spawnServer(settings, { NOTIFY_SOCKET: sock });
  const readyz = async () => {
    const r = await fetch(`http://127.0.0.1:${server.adminPort}/readyz`);
    return { status: r.status, body: (await r.json()) as { ready: boolean; reason?: string } };
  };
  const refused = () =>
    server.admin('/api/v1/fleet').then((f) => f.problems.filter((p: any) => p.kind === 'rejected-tree'));
  try {
    await waitFor('READY=1', () => systemd.messages().some((m) => m.includes('READY=1')));
    const reason =
      /nothing served yet: the config tree was refused: broken\.yaml:4: .*nowhere.* \(1 error, 1 warning\)/;
    assert.match(
      systemd.messages().find((m) => m.includes('READY=1'))!,
      reason,
    );
    const r = await readyz();
    assert.is(r.status, 503);
    assert.match(r.body.reason!, reason);
    assert.match(server.output(), /"msg":"nothing served yet: the config tree was refused/);
    assert.not.match(server.output(), /still serving the last good version/, 'there is no last good version');
    // Fixed and re-read: serving, and the status line says so.
    writeFileSync(join(dir, 'broken.yaml'), '');
    server.child.kill('SIGHUP');
    await waitFor('serving', async () => (await readyz()).status === 200);
    await waitFor('STATUS serving', () => systemd.messages().some((m) => /STATUS=serving version 1/.test(m)));
    assert.equal(await refused(), []);
    // Broken again: refused while it is on disk; put back exactly as served, it is not refused any more
    // (nothing new is applied, so no newer version could have said so).
    writeFileSync(join(dir, 'broken.yaml'), 'kind: Service\nname: x\nendpoints: [{ address: nope }]\n');
    server.child.kill('SIGHUP');
    await waitFor('refused', async () => (await refused()).length === 1);
    assert.is((await server.admin('/api/v1/rejections/latest')).current, true);
    assert.is((await readyz()).status, 200, 'still serving version 1');
    writeFileSync(join(dir, 'broken.yaml'), '');
    server.child.kill('SIGHUP');
    await waitFor('no longer refused', async () => (await refused()).length === 0);
    assert.is((await server.admin('/api/v1/rejections/latest')).current, false);
    assert.is((await server.admin('/api/v1/config')).versionId, 1);
  } finally {
    systemd.stop();
    await server.stop('SIGKILL');
  }
});

test('every way the server is started carries the Node flags it runs with', async () => {
  const { readFileSync } = await import('node:fs');
  const { SERVER_NODE_FLAGS } = await import('../../src/shared/runtime-flags.ts');
  const unit = readFileSync(projectPath('systemd', 'fleetxds.service'), 'utf8');
  const starts = {
    'systemd ExecStart': /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '',
    'npm start': (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start,
    'the fleetxds command': readFileSync(projectPath('src', 'cli', 'main.ts'), 'utf8').split('\n')[0]!,
    "the release's bin/fleetxds": /^exec .*$/m.exec(
      (await import('../../src/packaging/release.ts')).releaseWrapper(),
    )![0],
  };
  assert.ok(SERVER_NODE_FLAGS.length > 0);
  for (const [where, line] of Object.entries(starts))
    for (const flag of SERVER_NODE_FLAGS) {
      // The flag must be Node's (before the script), not the script's.
      const script = line.search(/main\.js|$/);
      assert.ok(line.slice(0, script).split(/\s+/).includes(flag), `${where} lacks ${flag}: ${line}`);
    }
});

test.run();
