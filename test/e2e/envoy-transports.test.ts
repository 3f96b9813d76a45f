/**
 * Real Envoy, every way a proxy can connect to a running fleetxds: SotW ADS, delta ADS, per-type
 * gRPC (SotW and delta, no ADS), REST with fleetxds's bootstrap (long polling) and with a
 * hand-written bootstrap (Envoy's default 1 s request timeout, a cluster name of the operator's
 * choosing). ADS and REST run on Envoy 1.40 and 1.36, ADS also from a bootstrap without
 * set_node_on_first_message_only (Envoy resends its whole node on every request, which fleetxds
 * reads on a stream's first request only). Each Envoy starts from a bootstrap the CLI
 * printed, routes real HTTP and HTTPS (SNI, certificates over SDS) to real backends, follows YAML
 * edits, rejects nothing, and shows fleetxds's versions; fleetxds shows every type ACKed.
 * The gRPC side is served by two serving threads (grpc.threads), the Envoys' connections spread
 * over them by the kernel; the other Envoy tests serve in the main thread.
 * (Files are in envoy-files.test.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dumpedVersions } from '../helpers/envoy.ts';
import { httpsGet, labSpecs, reportSetupFailure, startLab, type Lab, type LabEnvoySpec } from '../helpers/envoy-lab.ts';
import { waitFor } from '../helpers/process.ts';
import { RESOURCE_TYPES } from '../../src/xds/resource-types.ts';

let lab: Lab;
let specs: LabEnvoySpec[];

const KINDS: Record<string, string> = Object.fromEntries(RESOURCE_TYPES.map((t) => [t.typeUrl, t.kind]));

test.before(async () => {
  specs = await labSpecs([
    ['ads', '1.40'],
    ['delta', '1.40'],
    ['per-type', '1.40'],
    ['per-type-delta', '1.40'],
    ['rest', '1.40'],
    ['rest-legacy', '1.40'],
    ['ads', '1.36'],
    ['ads-node-always', '1.40'],
    ['ads-node-always', '1.36'],
    ['rest', '1.36'],
    ['rest-legacy', '1.36'],
  ]);
  lab = await startLab(specs, { settings: { grpc: { listen: '127.0.0.1:0', threads: 2 } } });
  await Promise.all(specs.map((s) => lab.startEnvoy(s))).catch(reportSetupFailure);
});

test.after(async () => {
  await lab?.stop();
});

test('every Envoy starts from its fleetxds bootstrap and routes HTTP, and HTTPS by SNI with certificates over SDS', async () => {
  for (const s of specs) {
    await lab.routesTo(s, '/split', 'A');
    await lab.routesTo(s, '/ep', 'A');
    const shop = await httpsGet(s.httpsPort, '/ep', 'shop.test', lab.pki.caPem);
    assert.is(shop.status, 200, `${s.id} https`);
    assert.is(shop.body, 'A');
    assert.is(shop.peerCn, 'shop', `${s.id}: default certificate`);
    const api = await httpsGet(s.httpsPort, '/split', 'api.test', lab.pki.caPem);
    assert.is(api.body, 'A');
    assert.is(api.peerCn, 'api', `${s.id}: the SNI-selected certificate`);
  }
});

test('an endpoint change and a split change in YAML move traffic on every Envoy', async () => {
  const [services, routes] = [lab.docs['services.yaml'] as any[], lab.docs['routes.yaml'] as any[]];
  services.find((d) => d.name === 'ep').endpoints = [{ address: `127.0.0.1:${lab.backends.B!.port}` }];
  lab.write('services.yaml', services);
  await Promise.all(specs.map((s) => lab.routesTo(s, '/ep', 'B')));
  routes[0].routes[0].split = [
    { service: 'a', weight: 0 },
    { service: 'b', weight: 100 },
  ];
  lab.write('routes.yaml', routes);
  await Promise.all(specs.map((s) => lab.routesTo(s, '/split', 'B')));
});

test('Envoy rejected nothing and holds the versions fleetxds serves; fleetxds shows every type ACKed', async () => {
  const config = await lab.server.admin('/api/v1/config');
  for (const s of specs) {
    const envoy = lab.envoys.get(s.id)!;
    assert.is(await envoy.rejected(), 0, `${s.id}: update_rejected\n${envoy.log().slice(-2000)}`);
    const group = config.groups[s.id];
    const dumped = dumpedVersions(await envoy.configDump());
    for (const kind of ['cluster', 'listener'] as const) {
      const served = group[kind];
      for (const r of served.resources) {
        // SotW and REST carry the type's version; delta carries each resource's own.
        const want = s.mode.includes('delta') ? r.version : served.version;
        assert.is(dumped[kind]![r.name], want, `${s.id}: ${kind} ${r.name} version in Envoy's config_dump`);
      }
    }
  }
  let missing: string[] = [];
  await waitFor(
    'every node ACKed every type it uses',
    async () => {
      const nodes = await lab.server.admin('/api/v1/nodes');
      const cfg = await lab.server.admin('/api/v1/config');
      missing = [];
      for (const s of specs) {
        const entries = [...nodes.connected, ...nodes.polling].filter((n: any) => n.nodeId === `${s.id}-1`);
        const kinds = new Set<string>();
        for (const e of entries) {
          for (const [typeUrl, t] of Object.entries<any>(e.types)) {
            kinds.add(KINDS[typeUrl]!);
            const want = cfg.groups[s.id][KINDS[typeUrl]!].version;
            if (t.ackedVersion !== want)
              missing.push(
                `${s.id} ${KINDS[typeUrl]}: acked ${t.ackedVersion}, sent ${t.sentVersion}, current ${want}`,
              );
            if (t.lastNack) throw new Error(`${s.id}: NACK ${JSON.stringify(t.lastNack)}`);
          }
        }
        // A hand-written bootstrap declares no runtime layer: it never asks for RTDS. The lab's
        // listeners have no policy filter: no extension config to ask for (envoy-policy-ecds).
        const uses = RESOURCE_TYPES.length - 1 - (s.mode === 'rest-legacy' ? 1 : 0);
        if (kinds.size !== uses) missing.push(`${s.id}: types ${[...kinds].join(',')}`);
      }
      return missing.length === 0;
    },
    15_000,
    200,
  ).catch((err) => {
    throw new Error(`${(err as Error).message}: ${missing.join('; ')}`);
  });
  // Envoy says its release in user_agent_build_version: the status names it, on every transport.
  const nodes = await lab.server.admin('/api/v1/nodes');
  for (const s of specs) {
    const entries = [...nodes.connected, ...nodes.polling].filter((n: any) => n.nodeId === `${s.id}-1`);
    assert.ok(entries.length > 0, s.id);
    for (const e of entries)
      assert.match(e.userAgent, new RegExp(`^envoy/${s.version.replace('.', '\\.')}\\.\\d+$`), s.id);
  }
});

/** Resolves once each REST Envoy of `of` has made `more` further CDS polls (answered or held to the end). */
async function morePolls(of: typeof specs, more: number): Promise<void> {
  const attempts = async (id: string) =>
    Number(
      (await lab.envoys.get(id)!.stats('cluster_manager.cds.update_attempt$'))['cluster_manager.cds.update_attempt'],
    );
  const start = new Map(await Promise.all(of.map(async (s) => [s.id, await attempts(s.id)] as const)));
  for (const s of of)
    await waitFor(`${s.id}: ${more} more polls`, async () => (await attempts(s.id)) >= start.get(s.id)! + more, 30_000);
}

test('REST polls end within the proxy timeout: no update_failure with the default 1 s request_timeout or with long polling', async () => {
  // Refresh cycles, and on the long-polling ones held polls that outlive Envoy's default 1 s timeout,
  // counted as they happen.
  await morePolls(
    specs.filter((x) => x.mode.startsWith('rest')),
    2,
  );
  for (const s of specs.filter((x) => x.mode.startsWith('rest'))) {
    const failures = await lab.envoys.get(s.id)!.stats('update_failure$');
    const total = Object.values(failures).reduce<number>((a, v) => a + Number(v), 0);
    assert.is(total, 0, `${s.id}: ${JSON.stringify(failures)}`);
    const attempts = await lab.envoys.get(s.id)!.stats('cluster_manager.cds.update_attempt$');
    assert.ok(Number(attempts['cluster_manager.cds.update_attempt']) > 1, `${s.id} kept polling`);
  }
});

test('a restarted REST proxy records no NACK (each subscription starts again from no version)', async () => {
  for (const s of specs.filter((x) => x.mode.startsWith('rest') && x.version === '1.40')) {
    await lab.envoys.get(s.id)!.stop();
    await lab.startEnvoy(s);
    await lab.routesTo(s, '/split', 'B');
  }
  // A NACK would be inferred from the polls after the restart: let a few of them happen.
  await morePolls(
    specs.filter((x) => x.mode.startsWith('rest') && x.version === '1.40'),
    2,
  );
  const nacks = await lab.server.admin('/api/v1/nacks');
  assert.equal(nacks.nacks, [], 'no NACK recorded for any node');
  const status = await lab.server.admin('/api/v1/status');
  for (const n of status.nodes) assert.not.ok(n.lastNack, `${n.nodeId} shows no NACK`);
});

test('per-type and REST proxies got config sources naming their own xDS cluster, not ADS', async () => {
  const dump = await lab.envoys.get(specs.find((s) => s.mode === 'rest-legacy')!.id)!.configDump();
  const clusters = dump.configs.find((c: any) => String(c['@type']).endsWith('ClustersConfigDump'));
  const a = clusters.dynamic_active_clusters.find((d: any) => d.cluster.name === 'a').cluster;
  assert.equal(a.eds_cluster_config.eds_config.api_config_source.cluster_names, ['ops_xds']);
  assert.is(
    a.eds_cluster_config.eds_config.api_config_source.request_timeout,
    undefined,
    'no long polling for a proxy that did not ask',
  );
  const perType = await lab.envoys.get(specs.find((s) => s.mode === 'per-type-delta')!.id)!.configDump();
  const pc = perType.configs.find((c: any) => String(c['@type']).endsWith('ClustersConfigDump'));
  const src = pc.dynamic_active_clusters.find((d: any) => d.cluster.name === 'a').cluster.eds_cluster_config.eds_config
    .api_config_source;
  assert.is(src.api_type, 'DELTA_GRPC');
  assert.is(src.grpc_services[0].envoy_grpc.cluster_name, 'fleetxds');
});

test('a GrpcService in every group: Envoy is not sent its API listener; a shadowed route warns and really gets no traffic', async () => {
  const routes = lab.docs['routes.yaml'] as any[];
  // A route after /split with the same prefix and a header condition: never used.
  routes[0].routes.splice(1, 0, {
    name: 'split-beta',
    match: { prefix: '/split', headers: [{ name: 'x-beta', exact: '1' }] },
    to: 'a',
  });
  lab.write('routes.yaml', routes);
  lab.write('grpc.yaml', [
    {
      kind: 'GrpcService',
      name: 'greeter',
      target: 'greeter.internal:50051',
      groups: specs.map((s) => s.id),
      routes: [{ to: 'b' }],
    },
  ]);
  await waitFor('the new version applied', async () => {
    const cfg = await lab.server.admin('/api/v1/config');
    return cfg.groups[specs[0]!.id].listener.resources.some((r: any) => r.name === 'greeter.internal:50051');
  });
  const { versions } = await lab.server.admin('/api/v1/versions');
  const shadowed = versions[0].warnings.find((w: any) => w.code === 'FXDS_SHADOWED_ROUTE');
  assert.match(shadowed.message, /this route \("split-beta"\) is never used: routes\[0\] \("split"\) comes first/);
  assert.is(shadowed.location.file, 'routes.yaml');
  await new Promise((r) => setTimeout(r, 1500));
  for (const s of specs) {
    const envoy = lab.envoys.get(s.id)!;
    assert.not.match(envoy.log(), /ApiListener/, `${s.id}: no API listener offered`);
    const dumped = dumpedVersions(await envoy.configDump());
    assert.equal(Object.keys(dumped.listener ?? {}).sort(), [`${s.id}-http`, `${s.id}-https`]);
    assert.is(await envoy.rejected(), 0);
  }
  // The shadowed route: a request with x-beta: 1 still goes where /split sends it (b), never to a.
  const s = specs[0];
  for (let i = 0; i < 10; i++) {
    const r = await new Promise<string>((resolve, reject) => {
      void import('node:http').then(({ request }) => {
        const req = request(
          { host: '127.0.0.1', port: s!.httpPort, path: '/split', headers: { host: 'shop.test', 'x-beta': '1' } },
          (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve(body));
          },
        );
        req.on('error', reject);
        req.end();
      });
    });
    assert.is(r, 'B');
  }
});

test.run();
