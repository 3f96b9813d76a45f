/**
 * `lb: weighted_by_load` (client-side weighted round robin, gRFC A58) through real Envoy 1.40 and
 * 1.36 and a gRPC-Go application: two backends report the same 100 requests per second, one at
 * 90% CPU and one at 10% (ORCA, in a response header for Envoy, in the trailers for gRPC), so the
 * light one weighs 9 times the heavy one and gets most of the traffic, where round robin gives
 * each half.
 */
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { grpcBootstrap } from '../../src/bootstrap/envoy-bootstrap.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { runGoClient, spreadOf, startGoBackend } from '../helpers/grpc-go.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

const WEIGHTING = 'weightedByLoad: { blackoutPeriod: 100ms, weightUpdatePeriod: 100ms }';

let app: RunningApp;
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, number>();
const servers: Server[] = [];
const goBackends: ChildProcess[] = [];

/** An HTTP backend that reports its load with each response, as Envoy reads ORCA from headers. */
function reportingBackend(name: string, cpu: number): Promise<number> {
  const s = createServer((req, res) => {
    req.resume();
    res.setHeader('endpoint-load-metrics', `TEXT cpu_utilization=${cpu}, rps_fractional=100`);
    res.end(name);
  });
  servers.push(s);
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r((s.address() as { port: number }).port)));
}

test.before(async () => {
  try {
    const http = [await reportingBackend('heavy', 0.9), await reportingBackend('light', 0.1)];
    const go = [await startGoBackend('heavy', 0.9), await startGoBackend('light', 0.1)];
    goBackends.push(...go.map((b) => b.process));
    const grpc = go.map((b) => b.port);
    const endpoints = (p: number[]) => `[${p.map((x) => `{ address: 127.0.0.1:${x} }`).join(', ')}]`;
    const docs = [
      `kind: Service\nname: weighted\nlb: weighted_by_load\n${WEIGHTING}\nendpoints: ${endpoints(http)}\n`,
      `kind: Service\nname: plain\nendpoints: ${endpoints(http)}\n`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes:\n' +
        '  - { match: { prefix: /plain }, to: plain }\n  - { to: weighted }\n',
      `kind: Service\nname: grpc-weighted\nprotocol: grpc\nlb: weighted_by_load\n${WEIGHTING}\n` +
        `endpoints: ${endpoints(grpc)}\n`,
      'kind: NodeGroup\nname: go-apps\nmatch: { cluster: go }\n',
      'kind: GrpcService\nname: weighted\ntarget: weighted.internal:50051\ngroups: [go-apps]\n' +
        'routes: [{ to: grpc-weighted }]\n',
    ];
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'weighted.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(...(await startEnvoys(app, (v) => httpGet(ports.get(v)!, '/').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  for (const s of servers) s.close();
  for (const c of goBackends) c.kill();
});

async function count(port: number, path: string, n: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const body = (await httpGet(port, path)).body;
    out[body] = (out[body] ?? 0) + 1;
  }
  return out;
}

test('Envoy: the endpoint reporting less load gets most requests; round robin gives each half', async () => {
  for (const v of ENVOY_VERSIONS) {
    const port = ports.get(v)!;
    await count(port, '/', 50); // reports arrive; weights are computed every 100 ms
    await new Promise((r) => setTimeout(r, 300));
    const weighted = await count(port, '/', 200);
    assert.ok((weighted.light ?? 0) >= 150, `Envoy ${v}, weighted by load: ${JSON.stringify(weighted)}`);
    const plain = await count(port, '/plain', 200);
    assert.ok(Math.abs((plain.light ?? 0) - 100) <= 10, `Envoy ${v}, round robin: ${JSON.stringify(plain)}`);
  }
});

test('gRPC-Go: the backend reporting less load gets most RPCs', async () => {
  const bootstrap = grpcBootstrap({ id: 'go-weighted', cluster: 'go' }, { host: '127.0.0.1', port: app.grpcPort });
  // One process: its first second of calls brings the reports in, then 400 RPCs are counted.
  const go = runGoClient('weighted.internal:50051', bootstrap, ['-hold', '1s', '-spread', '400', '-concurrency', '4']);
  const counts = await spreadOf(go);
  assert.ok((counts.light ?? 0) >= 300, `gRPC-Go, weighted by load: ${JSON.stringify(counts)}`);
});

test.run();
