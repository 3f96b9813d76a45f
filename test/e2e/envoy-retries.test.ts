/**
 * Retries through real Envoy 1.40 and 1.36: a backend that fails a request's first two tries with
 * 503 gives the client 200 and Envoy counts 2 retries (`upstream_rq_retry`), with its backoff between
 * tries as configured (read back from Envoy); without a policy the client sees the 503.
 */
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

let app: RunningApp;
let flaky: http.Server;
/** Tries left to fail, per request id (the x-request-id Envoy keeps across a request's tries). */
const failing = new Map<string, number>();
const tries: number[] = [];
const envoys: EnvoyProcess[] = [];
const ports = new Map<string, number>();

test.before(async () => {
  try {
    flaky = http.createServer((req, res) => {
      const key = String(req.headers['x-test-key'] ?? '');
      const left = failing.get(key) ?? 0;
      tries.push(Date.now());
      if (left > 0) {
        failing.set(key, left - 1);
        res.statusCode = 503;
        res.end('try again');
        return;
      }
      res.end('ok');
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    const port = (flaky.address() as { port: number }).port;
    const docs = [
      `kind: Service\nname: flaky\nendpoints: [{ address: 127.0.0.1:${port} }]\n`,
      `kind: VirtualHost
name: site
domains: ["*"]
routes:
  - match: { prefix: /retried }
    to: flaky
    retries: { on: [reset], statusCodes: [503], count: 3, backoff: { base: 100ms, max: 200ms } }
  - to: flaky
`,
    ];
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    app = await startServer(writeTree({ 'retries.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(...(await startEnvoys(app, (v) => httpGet(ports.get(v)!, '/').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  flaky?.close();
});

function get(port: number, path: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers: { 'x-test-key': key }, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      })
      .on('error', reject);
  });
}

test('two 503s and then 200: the client gets 200, Envoy retried twice, with the backoff configured', async () => {
  for (const [i, e] of envoys.entries()) {
    const v = ENVOY_VERSIONS[i]!;
    const before = Number(
      (await e.stats('cluster\\.flaky\\.upstream_rq_retry$'))['cluster.flaky.upstream_rq_retry'] ?? 0,
    );
    failing.set(`r-${v}`, 2);
    tries.length = 0;
    assert.is(await get(ports.get(v)!, '/retried', `r-${v}`), 200, `Envoy ${v}`);
    assert.is(tries.length, 3, `Envoy ${v}: three tries`);
    // Envoy's backoff is fully jittered (a try may follow at once): its policy is read from Envoy itself.
    const dump = JSON.stringify(await e.configDump());
    assert.match(dump, /"retry_back_off":\{"base_interval":"0\.100s","max_interval":"0\.200s"\}/, `Envoy ${v}`);
    await waitFor(
      `Envoy ${v}: retries counted`,
      async () => {
        const s = await e.stats('cluster\\.flaky\\.upstream_rq_retry$');
        return Number(s['cluster.flaky.upstream_rq_retry'] ?? 0) - before === 2;
      },
      5000,
    );
    failing.set(`n-${v}`, 1);
    assert.is(await get(ports.get(v)!, '/plain', `n-${v}`), 503, `Envoy ${v}: no retry policy, no retry`);
    assert.is(await e.rejected(), 0);
  }
});

test.run();
