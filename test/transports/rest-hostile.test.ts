/**
 * REST pollers that choose what a cache would be keyed by: a Host per poll, names per poll. What is
 * kept for reuse stays within its byte bound, each poll still gets the config sources its own
 * cluster needs, and a version a proxy rejected is not sent to it again.
 */
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { restRequest } from '../helpers/rest-poll.ts';
import { startServer } from '../helpers/server.ts';
import { BASE, writeTree } from '../helpers/tree.ts';
import { TypeUrls } from '../../src/xds/resource-types.ts';
import type { Derivable } from '../../src/snapshot/derived.ts';

const NODE = { id: 'rest-1', cluster: 'c', user_agent_name: 'envoy' };

const post = (port: number, host: string, body: object, agent?: http.Agent) => restRequest(port, body, { host, agent });

/** A tree whose CDS body is about 40 KB. */
function bigTree(): Record<string, string> {
  const services = Array.from(
    { length: 150 },
    (_, i) => `kind: Service\nname: svc-${i}\nendpoints: [{ address: 10.1.${i >> 8}.${i & 255}:80 }]\n`,
  ).join('---\n');
  const routes = Array.from({ length: 150 }, (_, i) => `  - match: { prefix: /s${i} }\n    to: svc-${i}\n`).join('');
  return {
    'services.yaml': services,
    'edge.yaml': `kind: Listener\nname: edge\nport: 8080\nvirtualHosts: [site]\n---\nkind: VirtualHost\nname: site\ndomains: ['*']\nroutes:\n${routes}`,
  };
}

test('polls with 200 distinct Host values: each gets its own cluster name, and what is kept stays within the bound', async () => {
  const maxCachedBytes = 256 * 1024;
  const app = await startServer(writeTree(bigTree()), { rest: { maxCachedBytes } });
  try {
    let bodyBytes = 0;
    for (let i = 0; i < 200; i++) {
      const host = `xds-${i}.example.com:${20000 + i}`;
      const r = await post(app.restPort, host, { node: { ...NODE, id: `n-${i}` }, type_url: TypeUrls.cluster });
      assert.is(r.status, 200);
      const source = r.json.resources.find((c: any) => c.eds_cluster_config).eds_cluster_config.eds_config;
      assert.equal(source.api_config_source.cluster_names, [host], 'config sources name the cluster the proxy sent');
      bodyBytes = JSON.stringify(r.json).length;
    }
    assert.ok(bodyBytes > 30_000, `a body is ${bodyBytes} bytes`);
    const t = app.cache.current!.groups.get('default')!.types.cluster as Derivable;
    const kept = [...(t.derived?.get('rest-selection')?.values() ?? [])] as { body: Buffer }[];
    const held = kept.reduce((n, s) => n + s.body.length, 0);
    assert.ok(held <= maxCachedBytes, `${held} bytes of ${kept.length} bodies kept`);
    assert.ok(kept.length >= 1 && kept.length < 200 * 0.1, `${kept.length} bodies kept`);
  } finally {
    await app.close();
  }
});

test('a node that states its xDS cluster in metadata gets that name whatever Host it sends', async () => {
  const app = await startServer(writeTree(BASE), { rest: {} });
  try {
    const node = { ...NODE, metadata: { fleetxds: { xds_cluster: 'rest@dc1' } } };
    const r = await post(app.restPort, 'lb.example.com:443', { node, type_url: TypeUrls.cluster });
    const source = r.json.resources.find((c: any) => c.eds_cluster_config).eds_cluster_config.eds_config;
    assert.equal(source.api_config_source.cluster_names, ['rest@dc1']);
  } finally {
    await app.close();
  }
});

test('a first version the proxy rejected is not sent again on every poll, only the next change is', async () => {
  const dir = writeTree(BASE);
  const app = await startServer(dir, { rest: { holdMs: 0 } });
  // One connection, as Envoy's REST client keeps it.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await post(app.restPort, 'fleetxds_rest', { node: NODE, type_url: TypeUrls.cluster }, agent);
    assert.is(first.status, 200);
    // Envoy rejected it: it polls again with no version (it holds none).
    for (let i = 0; i < 5; i++) {
      const again = await post(app.restPort, 'fleetxds_rest', { node: NODE, type_url: TypeUrls.cluster }, agent);
      assert.is(again.status, 304, `poll ${i + 1} after the rejection`);
    }
    const nacks = app.stores.nacks.list('rest-1', 10);
    assert.is(nacks.length, 1, 'one inferred rejection recorded');
    writeTree({ 'services.yaml': BASE['services.yaml']!.replace('name: web\n', 'name: web\nprotocol: http2\n') }, dir);
    await app.reload();
    const next = await post(app.restPort, 'fleetxds_rest', { node: NODE, type_url: TypeUrls.cluster }, agent);
    assert.is(next.status, 200, 'the next change is sent');
    assert.is.not(next.json.version_info, first.json.version_info);
    // A proxy restarted (after its bootstrap was fixed, say) polls over a new connection: it is
    // sent the version it holds none of, though an earlier run rejected it.
    assert.is(
      (await post(app.restPort, 'fleetxds_rest', { node: NODE, type_url: TypeUrls.cluster }, agent)).status,
      304,
    );
    // A running proxy's pool may poll over another of its connections: still the same run.
    const pooled = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const first2 = await post(
      app.restPort,
      'fleetxds_rest',
      { node: { ...NODE, id: 'rest-2' }, type_url: TypeUrls.cluster },
      pooled,
    );
    assert.is(first2.status, 200);
    assert.is(
      (
        await post(
          app.restPort,
          'fleetxds_rest',
          { node: { ...NODE, id: 'rest-2' }, type_url: TypeUrls.cluster },
          agent,
        )
      ).status,
      304,
      'a rejection reported over another connection that already carried polls',
    );
    pooled.destroy();
    const restarted = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const fresh = await post(app.restPort, 'fleetxds_rest', { node: NODE, type_url: TypeUrls.cluster }, restarted);
    assert.is(fresh.status, 200, 'a new run gets the config');
    restarted.destroy();
  } finally {
    agent.destroy();
    await app.close();
  }
});

test.run();
