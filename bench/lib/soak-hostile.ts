/**
 * Soak load from clients without credentials, one child process: REST polls of CDS each with a
 * Host and a node id of its own (a cache keyed by either would grow with them), each followed by a
 * poll that reports no version (REST's NACK, one per made-up node), and ADS streams that claim
 * canary node ids of the rollout under way and NACK what they get (forged NACKs must not halt it);
 * registration floods, without a credential (refused, never audited) and with the service's token
 * (bounded per service); gRPC calls that start a 1 MB message and never finish it; gzip requests
 * that inflate to 16 MB. Reports its counts over IPC.
 *   argv: REST port, gRPC port, total seconds, registration token
 */
import * as grpc from '@grpc/grpc-js';
import http from 'node:http';
import http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { adsRequest } from '../../test/helpers/h2-ads.ts';
import { rawAdsClient } from '../../test/helpers/raw-ads.ts';
import { hostileCounts } from './hostile-counts.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

const [restPort, grpcPort, totalSeconds] = process.argv.slice(2, 5).map(Number) as [number, number, number];
const token = process.argv[5] ?? '';
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const counts = hostileCounts();

/** A registration PUT; its status. */
function register(address: string, withToken: boolean): Promise<number> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: restPort,
        method: 'PUT',
        path: `/v1/services/soak-registered/endpoints/${address}`,
        agent,
        headers: { 'content-type': 'application/json', ...(withToken && { authorization: `Bearer ${token}` }) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end('{}');
  });
}

/** ADS calls on one connection that each start a 1 MB message and stop; ended by the server's bounds. */
function partialMessages(n: number): Promise<void> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
    session.on('error', () => undefined);
    let open = n;
    for (let i = 0; i < n; i++) {
      const req = adsRequest(session);
      const head = Buffer.alloc(5);
      head.writeUInt32BE(1 << 20, 1);
      req.write(Buffer.concat([head, Buffer.alloc(64 * 1024)]));
      counts.partialMessages++;
      req.on('close', () => {
        if (--open === 0) {
          session.close();
          resolve();
        }
      });
    }
    setTimeout(() => {
      session.destroy();
      resolve();
    }, 40_000).unref();
  });
}

const BOMB = gzipSync(Buffer.alloc(16 * 1024 * 1024));
/** A gzip request that inflates to 16 MB; resolves when the server ends the call. */
function gzipBomb(): Promise<void> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
    session.on('error', () => resolve());
    const req = adsRequest(session, { 'grpc-encoding': 'gzip' });
    const head = Buffer.alloc(5);
    head[0] = 1;
    head.writeUInt32BE(BOMB.length, 1);
    req.end(Buffer.concat([head, BOMB]));
    counts.gzipBombs++;
    req.on('close', () => {
      session.close();
      resolve();
    });
    setTimeout(() => {
      session.destroy();
      resolve();
    }, 10_000).unref();
  });
}

function poll(host: string, id: string, version: string): Promise<number> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ node: { id, cluster: 'forged' }, type_url: TypeUrls.cluster, version_info: version });
    const req = http.request(
      {
        host: '127.0.0.1',
        port: restPort,
        method: 'POST',
        path: '/v3/discovery:clusters',
        agent,
        headers: { host, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => {
      counts.errors++;
      resolve(0);
    });
    req.end(body);
  });
}

const Client = rawAdsClient();
function forgedNack(id: string): Promise<void> {
  return new Promise((resolve) => {
    const client = new Client(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
    const call = client.S();
    const done = () => {
      call.cancel();
      client.close();
      resolve();
    };
    const timer = setTimeout(done, 5000);
    call.on('data', ({ msg }) => {
      call.write({
        type_url: msg.type_url,
        version_info: '',
        response_nonce: msg.nonce,
        error_detail: { code: 13, message: `forged: ${id} rejects ${'x'.repeat(4000)}` },
      });
      counts.forgedNacks++;
      clearTimeout(timer);
      setTimeout(done, 50);
    });
    call.on('error', () => undefined);
    call.write({ node: { id, cluster: 'forged' }, type_url: TypeUrls.cluster });
  });
}

void (async () => {
  const end = Date.now() + totalSeconds * 1000;
  let i = 0;
  let last = Date.now();
  while (Date.now() < end) {
    i++;
    const host = `x${i}.forged.example:${20000 + (i % 40000)}`;
    if ((await poll(host, `forged-${i}`, '')) === 200) counts.polls++;
    if ((await poll(host, `forged-${i}`, '')) === 304) counts.restNacks++;
    if (i % 10 === 0) await forgedNack(`canary-forged-${i}`);
    const a = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8080`;
    if ((await register(a, false)) === 403) counts.unauthenticatedRegistrations++;
    if (i % 2 === 0 && (await register(a, true)) === 200) counts.registrations++;
    if (i % 200 === 0) await Promise.all([partialMessages(60), ...Array.from({ length: 8 }, gzipBomb)]);
    if (Date.now() - last > 5000) {
      process.send!({ type: 'hostile', ...counts });
      last = Date.now();
    }
  }
  process.send!({ type: 'hostile', ...counts });
  process.send!({ type: 'done' });
})();
