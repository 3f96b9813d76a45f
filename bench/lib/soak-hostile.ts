/**
 * Soak load from clients without credentials, one child process: REST polls of CDS each with a
 * Host and a node id of its own (a cache keyed by either would grow with them), each followed by a
 * poll that reports no version (REST's NACK, one per made-up node), and ADS streams that claim
 * canary node ids of the rollout under way and NACK what they get (forged NACKs must not halt it).
 * Reports its counts over IPC.
 *   argv: REST port, gRPC port, total seconds
 */
import * as grpc from '@grpc/grpc-js';
import http from 'node:http';
import { rawAdsClient } from '../../test/helpers/raw-ads.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';

const [restPort, grpcPort, totalSeconds] = process.argv.slice(2).map(Number) as [number, number, number];
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const counts = { polls: 0, restNacks: 0, forgedNacks: 0, errors: 0 };

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
    if (Date.now() - last > 5000) {
      process.send!({ type: 'hostile', ...counts });
      last = Date.now();
    }
  }
  process.send!({ type: 'hostile', ...counts });
  process.send!({ type: 'done' });
})();
