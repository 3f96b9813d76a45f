#!/usr/bin/env python3
"""
systemctl for the install test's sandbox, where systemd itself cannot run as PID 1: it starts a
unit the way systemd's unit file says, from the unit file itself (User, Group, Environment, UMask,
WorkingDirectory, StateDirectory, CacheDirectory, ProtectSystem=strict, ReadOnlyPaths, PrivateTmp,
NoNewPrivileges, Type=notify with its NOTIFY_SOCKET, TimeoutStartSec, ExecReload, KillMode), and
keeps what systemd would show (the Status= line, the journal) under /run/fake-systemd. Only what
the package's maintainer scripts and the operator's documented commands use is implemented; any
other directive of [Service] that changes how the process runs is refused by name, so a unit that
grows one fails the test instead of being run differently.
"""
import os
import shlex
import signal
import socket
import subprocess
import sys
import time

UNITS = ['/etc/systemd/system', '/lib/systemd/system']
WANTS = '/etc/systemd/system/multi-user.target.wants'
STATE = '/run/fake-systemd'

# Directives that only restrict what the process may do (seccomp, capabilities, namespaces); the
# sandbox does not apply them, which the test's closing note says.
NOT_APPLIED = {
    'NotifyAccess', 'WatchdogSec', 'Restart', 'RestartSec', 'TimeoutStopSec', 'LimitNOFILE',
    'ProtectHome', 'PrivateDevices', 'ProtectKernelTunables', 'ProtectKernelModules', 'ProtectKernelLogs',
    'ProtectControlGroups', 'ProtectClock', 'ProtectHostname', 'ProtectProc', 'RestrictNamespaces',
    'RestrictRealtime', 'RestrictSUIDSGID', 'LockPersonality', 'RemoveIPC', 'CapabilityBoundingSet',
    'AmbientCapabilities', 'RestrictAddressFamilies', 'SystemCallArchitectures', 'SystemCallFilter',
    'SystemCallErrorNumber', 'SyslogIdentifier', 'StateDirectoryMode', 'KillMode', 'Type',
}
APPLIED = {
    'User', 'Group', 'Environment', 'UMask', 'WorkingDirectory', 'StateDirectory', 'CacheDirectory',
    'ProtectSystem', 'ReadOnlyPaths', 'PrivateTmp', 'NoNewPrivileges', 'ExecStart', 'ExecReload',
    'TimeoutStartSec',
}


def unit_path(name):
    if not name.endswith('.service'):
        name += '.service'
    for d in UNITS:
        if os.path.exists(os.path.join(d, name)):
            return name, os.path.join(d, name)
    return name, None


def parse(path):
    service = {}
    section = None
    for raw in open(path):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('['):
            section = line
            continue
        if section != '[Service]':
            continue
        key, _, value = line.partition('=')
        if key not in APPLIED and key not in NOT_APPLIED:
            sys.exit(f'fake systemctl: {path}: [Service] {key}= is not emulated; teach the install test')
        service.setdefault(key, []).append(value)
    return service


def seconds(text, default):
    if not text:
        return default
    t = text.strip()
    return float(t[:-1]) if t.endswith('s') else float(t)


def pid_of(name):
    try:
        pid = int(open(f'{STATE}/{name}.pid').read())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def status_line(name):
    try:
        return open(f'{STATE}/{name}.status').read().strip()
    except OSError:
        return ''


def start(name, path):
    if pid_of(name):
        return 0
    s = parse(path)
    one = lambda k, d=None: s.get(k, [d])[-1]
    user, group = one('User', 'root'), one('Group', one('User', 'root'))
    os.makedirs(STATE, exist_ok=True)
    for key, base in (('StateDirectory', '/var/lib'), ('CacheDirectory', '/var/cache')):
        for d in (one(key) or '').split():
            p = os.path.join(base, d)
            os.makedirs(p, exist_ok=True)
            subprocess.run(['chown', '-R', f'{user}:{group}', p], check=True)
            if key == 'StateDirectory':
                os.chmod(p, int(one('StateDirectoryMode', '0755'), 8))
    env = {'PATH': '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'LANG': 'C.UTF-8'}
    for e in s.get('Environment', []):
        for pair in shlex.split(e):
            k, _, v = pair.partition('=')
            env[k] = v
    notify = f'{STATE}/{name}.notify'
    if os.path.exists(notify):
        os.unlink(notify)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify)
    os.chmod(notify, 0o777)
    env['NOTIFY_SOCKET'] = notify
    env['HOME'] = '/'
    env['USER'] = user
    # The service's own mount namespace: / read-only (ProtectSystem=strict) but for its state and
    # cache directories, ReadOnlyPaths read-only, a private /tmp.
    writable = [os.path.join('/var/lib', d) for d in (one('StateDirectory') or '').split()]
    writable += [os.path.join('/var/cache', d) for d in (one('CacheDirectory') or '').split()]
    mounts = ['mount --make-rprivate /']
    if one('PrivateTmp') == 'yes':
        mounts.append('mount -t tmpfs -o mode=1777 tmpfs /tmp')
    if one('ProtectSystem') == 'strict':
        mounts += [f'mount --bind {shlex.quote(w)} {shlex.quote(w)}' for w in writable]
        mounts.append('mount -o remount,bind,ro /')
    for p in ' '.join(s.get('ReadOnlyPaths', [])).split():
        mounts += [f'mount --bind {shlex.quote(p)} {shlex.quote(p)}', f'mount -o remount,bind,ro {shlex.quote(p)}']
    exec_start = one('ExecStart')
    privileges = ['setpriv', f'--reuid={user}', f'--regid={group}', '--init-groups']
    if one('NoNewPrivileges') == 'yes':
        privileges.append('--no-new-privs')
    script = ' && '.join(mounts) + (
        f' && cd {shlex.quote(one("WorkingDirectory", "/"))} && umask {one("UMask", "0022")}'
        f' && exec {" ".join(privileges)} {exec_start}'
    )
    journal = open(f'{STATE}/{name}.journal', 'ab')
    proc = subprocess.Popen(['unshare', '-m', 'sh', '-c', script], env=env, stdout=journal, stderr=journal,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    open(f'{STATE}/{name}.pid', 'w').write(str(proc.pid))
    # A watcher of the notify socket outlives this command, as systemd would: it keeps Status= current.
    if os.fork() == 0:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        watch(name, sock, proc.pid)
        os._exit(0)
    deadline = time.time() + min(seconds(one('TimeoutStartSec'), 90), 60)
    while time.time() < deadline:
        if os.path.exists(f'{STATE}/{name}.ready'):
            return 0
        if proc.poll() is not None:
            print(f'Job for {name} failed: the process exited with {proc.returncode}', file=sys.stderr)
            return 1
        time.sleep(0.05)
    print(f'Job for {name} failed: start timed out (no READY=1)', file=sys.stderr)
    stop(name, path)
    return 1


def watch(name, sock, pid):
    sock.settimeout(0.5)
    while True:
        try:
            data = sock.recv(65536).decode()
        except socket.timeout:
            try:
                os.kill(pid, 0)
                continue
            except OSError:
                return
        for line in data.split('\n'):
            if line == 'READY=1':
                open(f'{STATE}/{name}.ready', 'w').close()
            elif line.startswith('STATUS='):
                open(f'{STATE}/{name}.status', 'w').write(line[len('STATUS='):] + '\n')


def stop(name, path):
    pid = pid_of(name)
    for f in ('pid', 'ready'):
        try:
            os.unlink(f'{STATE}/{name}.{f}')
        except OSError:
            pass
    if not pid:
        return 0
    os.killpg(pid, signal.SIGTERM)
    for _ in range(600):
        try:
            os.kill(pid, 0)
        except OSError:
            return 0
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    os.killpg(pid, signal.SIGKILL)
    return 0


def journalctl(argv):
    """journalctl -u UNIT [-n N]: the unit's output, newest last."""
    name = unit_path(argv[argv.index('-u') + 1])[0] if '-u' in argv else None
    lines = int(argv[argv.index('-n') + 1]) if '-n' in argv else 10
    if name is None:
        sys.exit('fake journalctl: only -u UNIT is emulated')
    try:
        text = open(f'{STATE}/{name}.journal', errors='replace').read().splitlines()
    except OSError:
        text = []
    print('\n'.join(text[-lines:]) if text else '-- No entries --')
    return 0


def main(argv):
    if os.path.basename(sys.argv[0]) == 'journalctl':
        return journalctl(argv)
    args = [a for a in argv if not a.startswith('--')]
    flags = [a for a in argv if a.startswith('--')]
    if not args:
        sys.exit('fake systemctl: no command')
    cmd, names = args[0], args[1:]
    if cmd == 'daemon-reload':
        return 0
    status = 0
    for raw in names:
        if '*' in raw:
            continue  # a pattern matches running units only; none of the register units run here
        name, path = unit_path(raw)
        if path is None:
            print(f'Unit {name} not found.', file=sys.stderr)
            status = 5
            continue
        link = os.path.join(WANTS, name)
        if cmd == 'enable':
            os.makedirs(WANTS, exist_ok=True)
            if not os.path.lexists(link):
                os.symlink(path, link)
            if '--now' in flags:
                status |= start(name, path)
        elif cmd == 'disable':
            if os.path.lexists(link):
                os.unlink(link)
        elif cmd == 'start':
            status |= start(name, path)
        elif cmd == 'stop':
            status |= stop(name, path)
        elif cmd in ('restart', 'try-restart'):
            if cmd == 'restart' or pid_of(name):
                stop(name, path)
                status |= start(name, path)
        elif cmd == 'reload':
            pid = pid_of(name)
            if not pid:
                print(f'{name} is not active, cannot reload.', file=sys.stderr)
                status = 1
            else:
                os.kill(pid, signal.SIGHUP)
        elif cmd == 'is-active':
            active = pid_of(name) is not None
            print('active' if active else 'inactive')
            status |= 0 if active else 3
        elif cmd == 'is-enabled':
            enabled = os.path.lexists(link)
            print('enabled' if enabled else 'disabled')
            status |= 0 if enabled else 1
        elif cmd == 'status':
            pid = pid_of(name)
            print(f'● {name}')
            print(f'     Loaded: loaded ({path}; {"enabled" if os.path.lexists(link) else "disabled"})')
            print(f'     Active: {"active (running)" if pid else "inactive (dead)"}')
            if pid:
                print(f'   Main PID: {pid}')
            print(f'     Status: "{status_line(name)}"')
            status |= 0 if pid else 3
        else:
            sys.exit(f'fake systemctl: {cmd} is not emulated')
    return status


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
