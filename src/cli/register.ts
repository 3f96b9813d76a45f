/**
 * `fleetxds register`: run beside an application on its VM (a systemd unit). It registers the
 * application's address into a service, heartbeats with its local check's verdict, and on SIGTERM
 * or SIGINT asks fleetxds to drain it before it exits.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { parseHostPort } from '../shared/addresses.ts';
import { parseDurationMs } from '../shared/duration.ts';

export interface RegisterOptions {
  service?: string;
  address?: string;
  /** The fleetxds REST listener, e.g. https://fleetxds.internal:18001. */
  server?: string;
  /** `http://127.0.0.1:8080/health` or `tcp` (the address accepts connections). */
  check?: string;
  interval?: string;
  weight?: string;
  /** Where the endpoint runs (its locality, for failover by distance and locality weights). */
  region?: string;
  zone?: string;
  subZone?: string;
  tokenFile?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
}

/** The local check's verdict: an HTTP 2xx, or a TCP connection accepted within 2 s. */
export function localCheck(check: string | undefined, address: string): Promise<'healthy' | 'unhealthy'> {
  if (!check) return Promise.resolve('healthy');
  return new Promise((resolve) => {
    const done = (ok: boolean) => resolve(ok ? 'healthy' : 'unhealthy');
    if (check === 'tcp') {
      const hp = parseHostPort(address);
      if (!hp) return done(false);
      const s = net.connect({ host: hp.host, port: hp.port });
      s.setTimeout(2000, () => (s.destroy(), done(false)));
      s.once('connect', () => (s.destroy(), done(true)));
      s.once('error', () => done(false));
      return;
    }
    const req = http.get(check, { timeout: 2000 }, (res) => {
      res.resume();
      done(res.statusCode! >= 200 && res.statusCode! < 300);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => done(false));
  });
}

function call(
  opts: RegisterOptions,
  method: string,
  path: string,
  body?: object,
): Promise<{ status: number; text: string }> {
  const url = new URL(path, opts.server);
  const token = opts.tokenFile && readFileSync(opts.tokenFile, 'utf8').trim();
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      url,
      {
        method,
        headers: {
          ...(body && { 'content-type': 'application/json' }),
          ...(token && { authorization: `Bearer ${token}` }),
        },
        ...(opts.tlsCa && { ca: readFileSync(opts.tlsCa) }),
        ...(opts.tlsCert && { cert: readFileSync(opts.tlsCert), key: readFileSync(opts.tlsKey!) }),
        timeout: 5000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.once('timeout', () => req.destroy(new Error('fleetxds did not answer within 5 s')));
    req.once('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

/**
 * Under systemd, the unit hands the instance its one secret as the credential `secret`
 * (LoadCredential=, readable by this unit's dynamic user alone): the client key when a client
 * certificate is given, else the bearer token. Flags given on the command line win.
 */
export function withCredential(
  opts: RegisterOptions,
  credentials = process.env.CREDENTIALS_DIRECTORY,
): RegisterOptions {
  const secret = credentials && join(credentials, 'secret');
  if (!secret || !existsSync(secret)) return opts;
  if (opts.tlsCert) return opts.tlsKey ? opts : { ...opts, tlsKey: secret };
  return opts.tokenFile ? opts : { ...opts, tokenFile: secret };
}

export async function registerCommand(given: RegisterOptions): Promise<number> {
  const opts = withCredential(given);
  if (!opts.service || !opts.address || !opts.server) {
    process.stderr.write('register needs --service NAME --address IP:PORT --server URL\n');
    return 2;
  }
  const intervalMs = parseDurationMs(opts.interval ?? '10s') ?? 10_000;
  const path = `/v1/services/${encodeURIComponent(opts.service)}/endpoints/${encodeURIComponent(opts.address)}`;
  let stopping = false;
  let last = '';
  const beat = async () => {
    const health = await localCheck(opts.check, opts.address!);
    try {
      const r = await call(opts, 'PUT', path, {
        health,
        ...(opts.weight && { weight: Number(opts.weight) }),
        ...(opts.region && { region: opts.region }),
        ...(opts.zone && { zone: opts.zone }),
        ...(opts.subZone && { subZone: opts.subZone }),
      });
      const line =
        r.status === 200
          ? `registered ${opts.address} in ${opts.service}: ${health}`
          : `refused (${r.status}): ${r.text}`;
      if (line !== last) process.stdout.write(`${line}\n`);
      last = line;
      return r.status;
    } catch (err) {
      process.stderr.write(`fleetxds unreachable: ${(err as Error).message}\n`);
      return 0;
    }
  };
  const first = await beat();
  if (first === 403 || first === 404 || first === 400) return 1;
  const timer = setInterval(() => void beat(), intervalMs);
  await new Promise<void>((resolve) => {
    const stop = () => {
      if (stopping) return;
      stopping = true;
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  clearInterval(timer);
  const r = await call(opts, 'POST', `${path}/drain`).catch((err: Error) => ({ status: 0, text: err.message }));
  process.stdout.write(r.status === 200 ? `draining ${opts.address}\n` : `drain failed: ${r.text}\n`);
  return 0;
}
