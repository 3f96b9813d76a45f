import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, T } from '../helpers/ads-client.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';

function metric(text: string, name: string): number {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name} `) || (l.startsWith(`${name}{`) && l.split(' ')[0] === name));
  return line ? Number(line.split(' ').pop()) : NaN;
}

test('Prometheus metrics: clients by transport, pushes, ACKs, NACKs, push latency, validation failures, apply duration', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir);
  try {
    const c = connect(app.grpcPort);
    const s = c.open();
    s.send({ node: { id: 'm', cluster: 'x' }, type_url: T.cluster });
    const r1 = await s.next();
    s.send({ type_url: T.cluster, version_info: r1.version_info, response_nonce: r1.nonce });
    writeFileSync(
      join(dir, 'services.yaml'),
      BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 2s\n'),
    );
    await app.reload();
    const r2 = await s.next();
    s.send({
      type_url: T.cluster,
      version_info: r1.version_info,
      response_nonce: r2.nonce,
      error_detail: { code: 13, message: 'no' },
    });
    writeFileSync(join(dir, 'bad.yaml'), 'kind: Nope\n');
    await app.reload();
    const cluster = () => app.registry.byNodeId('m')[0]?.types[T.cluster];
    await waitFor('the NACK read', () => cluster()?.lastNack !== undefined, 10_000, 10);
    const text = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
    assert.is(metric(text, 'fleetxds_connected_clients{transport="grpc-ads"}'), 1);
    assert.is(metric(text, 'fleetxds_pushes_total{type="Cluster"}'), 2);
    assert.is(metric(text, 'fleetxds_acks_total{type="Cluster"}'), 1);
    assert.is(metric(text, 'fleetxds_nacks_total{type="Cluster"}'), 1);
    assert.is(metric(text, 'fleetxds_push_latency_seconds_count{type="Cluster"}'), 1);
    assert.is(metric(text, 'fleetxds_validation_failures_total'), 1);
    assert.is(metric(text, 'fleetxds_apply_duration_seconds_count'), 2);
    assert.is(metric(text, 'fleetxds_config_version'), 2);
    assert.match(text, /process_resident_memory_bytes/);
    // Counted between scrapes, added at the next: totals go on, nothing is counted twice.
    rmSync(join(dir, 'bad.yaml'));
    writeFileSync(
      join(dir, 'services.yaml'),
      BASE['services.yaml']!.replace('name: web\n', 'name: web\nconnectTimeout: 3s\n'),
    );
    await app.reload();
    const r3 = await s.next();
    s.send({ type_url: T.cluster, version_info: r3.version_info, response_nonce: r3.nonce });
    await waitFor('the ACK read', () => cluster()?.ackedVersion === r3.version_info, 10_000, 10);
    const again = await (await fetch(`http://127.0.0.1:${app.adminPort}/metrics`)).text();
    assert.is(metric(again, 'fleetxds_pushes_total{type="Cluster"}'), 3);
    assert.is(metric(again, 'fleetxds_acks_total{type="Cluster"}'), 2);
    assert.is(metric(again, 'fleetxds_nacks_total{type="Cluster"}'), 1);
    assert.is(metric(again, 'fleetxds_push_latency_seconds_count{type="Cluster"}'), 2);
    s.close();
    c.close();
  } finally {
    await app.close();
  }
});

test.run();
