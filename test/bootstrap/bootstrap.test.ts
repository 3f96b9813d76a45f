import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { envoyBootstrap, grpcBootstrap, type BootstrapInput } from '../../src/bootstrap/envoy-bootstrap.ts';
import { grpcCertificateProviders } from '../../src/bootstrap/grpc-certificates.ts';
import { checkTree } from '../../src/compile/check-tree.ts';
import { projectPath } from '../../src/shared/paths.ts';
import { encodeJson } from '../../src/xds/proto-json.ts';
import { freePort } from '../helpers/envoy.ts';
import { runCli, spawnServer } from '../helpers/process.ts';
import { BASE, tempDir, writeTree } from '../helpers/tree.ts';

const UPDATE = process.env.UPDATE_GOLDEN === '1';
const dir = projectPath('test', 'golden', 'bootstrap');
const base = { nodeId: 'edge-1', nodeCluster: 'edge' };
const cases: Record<string, BootstrapInput> = {
  ads: { ...base, mode: 'ads', server: { host: '10.0.0.5', port: 18000 } },
  delta: { ...base, mode: 'delta', server: { host: 'xds.internal.example', port: 18000 } },
  rest: {
    ...base,
    mode: 'rest',
    server: { host: '10.0.0.5', port: 18002 },
    refreshDelayMs: 1000,
    requestTimeoutMs: 30000,
    longPollMs: 25000,
  },
  'rest-no-long-poll': { ...base, mode: 'rest', server: { host: '10.0.0.5', port: 18002 }, refreshDelayMs: 1000 },
  'per-type': { ...base, mode: 'per-type', server: { host: '10.0.0.5', port: 18000 } },
  'per-type-delta': { ...base, mode: 'per-type-delta', server: { host: '10.0.0.5', port: 18000 } },
  files: {
    ...base,
    mode: 'files',
    files: {
      cds: '/var/lib/fleetxds/files/edge/cds.json',
      lds: '/var/lib/fleetxds/files/edge/lds.json',
      rtds: {
        base: '/var/lib/fleetxds/files/edge/rtds/fleetxds.json',
        overrides: '/var/lib/fleetxds/files/edge/rtds/fleetxds-overrides.json',
      },
    },
  },
  'files-watched': {
    ...base,
    mode: 'files',
    files: {
      cds: '/var/lib/fleetxds/files/edge/current/cds.json',
      lds: '/var/lib/fleetxds/files/edge/current/lds.json',
      watchedDirectory: '/var/lib/fleetxds/files/edge',
    },
  },
  // The server serves TLS: checked against its CA and pinned to its name; mTLS with the proxy's certificate.
  'ads-mtls': {
    ...base,
    mode: 'ads',
    server: { host: 'xds.internal.example', port: 18000 },
    tls: {
      ca: '/etc/envoy/tls/fleet-ca.pem',
      serverName: 'xds.internal.example',
      cert: '/etc/envoy/tls/edge-1.pem',
      key: '/etc/envoy/tls/edge-1.key',
    },
  },
  // Where the node runs: Envoy reports it as node.locality and is served its locality's endpoints.
  'ads-locality': {
    ...base,
    mode: 'ads',
    server: { host: '10.0.0.5', port: 18000 },
    locality: { region: 'us-east', zone: 'us-east-1a', subZone: '' },
  },
  // The node is an endpoint of its group's workload: Envoy's local cluster, for zone-aware routing.
  'ads-local-cluster': {
    ...base,
    mode: 'ads',
    server: { host: '10.0.0.5', port: 18000 },
    locality: { region: 'us-east', zone: 'us-east-1a', subZone: '' },
    localCluster: { service: 'edge' },
  },
  'per-type-local-cluster': {
    ...base,
    mode: 'per-type',
    server: { host: '10.0.0.5', port: 18000 },
    localCluster: { service: 'edge' },
  },
  'files-local-cluster': {
    ...base,
    mode: 'files',
    files: { cds: '/var/lib/fleetxds/files/edge/cds.json', lds: '/var/lib/fleetxds/files/edge/lds.json' },
    localCluster: { service: 'edge', file: '/var/lib/fleetxds/files/edge/eds/edge.json' },
  },
  'rest-tls-ip': {
    ...base,
    mode: 'rest',
    server: { host: '10.0.0.5', port: 18002 },
    refreshDelayMs: 1000,
    tls: { ca: '/etc/envoy/tls/fleet-ca.pem', serverName: '10.0.0.5' },
  },
};

function golden(name: string, value: object): void {
  const file = join(dir, `${name}.json`);
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (UPDATE) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, text);
  }
  assert.ok(existsSync(file), `missing ${file}; run UPDATE_GOLDEN=1`);
  assert.fixture(text, readFileSync(file, 'utf8'));
}

for (const [name, input] of Object.entries(cases)) {
  test(`bootstrap ${name}: golden, and parsed by the real envoy.config.bootstrap.v3.Bootstrap`, () => {
    const b = envoyBootstrap(input);
    golden(name, b);
    assert.equal(encodeJson('envoy.config.bootstrap.v3.Bootstrap', b).issues, []);
  });
}

test('bootstrap grpc (proxyless)', () => {
  golden('grpc', grpcBootstrap({ id: 'client-1', cluster: 'greeter-clients' }, { host: '10.0.0.5', port: 18000 }));
});

test('bootstrap grpc (proxyless) in a locality', () => {
  const locality = { region: 'us-east', zone: 'us-east-1b', subZone: 'rack-2' };
  golden(
    'grpc-locality',
    grpcBootstrap({ id: 'client-2', cluster: 'greeter-clients', locality }, { host: '10.0.0.5', port: 18000 }),
  );
});

test('bootstrap grpc with certificate providers: one file watcher per Secret the group reads, at its onHost paths', async () => {
  const input = projectPath('test', 'golden', 'cases', 'grpc-servers', 'input');
  const { model } = await checkTree(input);
  const providers = grpcCertificateProviders(model!, 'mesh', input);
  assert.equal(Object.keys(providers), ['mesh-ca', 'orders-identity']);
  golden(
    'grpc-certificates',
    grpcBootstrap({ id: 'orders-1', cluster: 'mesh' }, { host: '10.0.0.5', port: 18000 }, providers),
  );
  // A group without gRPC TLS declares none.
  assert.equal(grpcCertificateProviders(model!, 'default', input), {});
});

test('key properties per mode', () => {
  const ads = envoyBootstrap(cases.ads!) as any;
  assert.is(ads.dynamic_resources.ads_config.api_type, 'GRPC');
  assert.ok(
    ads.static_resources.clusters[0].typed_extension_protocol_options[
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions'
    ].explicit_http_config.http2_protocol_options.connection_keepalive,
  );
  assert.is((envoyBootstrap(cases.delta!) as any).dynamic_resources.ads_config.api_type, 'DELTA_GRPC');
  assert.is((envoyBootstrap(cases.delta!) as any).static_resources.clusters[0].type, 'STRICT_DNS');
  const rest = (envoyBootstrap(cases.rest!) as any).dynamic_resources.cds_config.api_config_source;
  assert.equal({ t: rest.api_type, r: rest.refresh_delay, q: rest.request_timeout }, { t: 'REST', r: '1s', q: '30s' });
  // Long polling is opted into by node metadata, and only with a request_timeout that outlasts the hold.
  // The node also states its cluster for fleetxds, which served config sources must name.
  assert.equal((envoyBootstrap(cases.rest!) as any).node.metadata, {
    fleetxds: { xds_cluster: 'fleetxds_rest', long_poll_ms: 25000 },
  });
  const plain = envoyBootstrap(cases['rest-no-long-poll']!) as any;
  assert.equal(plain.node.metadata, { fleetxds: { xds_cluster: 'fleetxds_rest' } });
  assert.equal((envoyBootstrap(cases['per-type']!) as any).node.metadata, { fleetxds: { xds_cluster: 'fleetxds' } });
  assert.is(plain.dynamic_resources.cds_config.api_config_source.request_timeout, undefined);
  const perType = (envoyBootstrap(cases['per-type-delta']!) as any).dynamic_resources;
  assert.is(perType.ads_config, undefined);
  assert.is(perType.cds_config.api_config_source.api_type, 'DELTA_GRPC');
  assert.equal(
    (envoyBootstrap(cases['files-watched']!) as any).dynamic_resources.lds_config.path_config_source.watched_directory,
    { path: '/var/lib/fleetxds/files/edge' },
  );
  assert.is((envoyBootstrap(cases.ads!) as any).admin.address.socket_address.address, '127.0.0.1');
});

test('several --server (replicas): every one an endpoint of the xDS cluster, or an xds_server for gRPC', () => {
  const out = cli('--group', 'edge', '--mode', 'ads', '--server', '10.0.0.5:18000', '--server', '10.0.0.6:18000');
  assert.is(out.status, 0, out.stderr);
  const b = JSON.parse(out.stdout);
  const endpoints = b.static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints.map(
    (e: any) => `${e.endpoint.address.socket_address.address}:${e.endpoint.address.socket_address.port_value}`,
  );
  assert.equal(endpoints, ['10.0.0.5:18000', '10.0.0.6:18000']);
  const g = JSON.parse(cli('--mode', 'grpc', '--server', 'a.internal:18000', '--server', 'b.internal:18000').stdout);
  assert.equal(
    g.xds_servers.map((s: any) => s.server_uri),
    ['a.internal:18000', 'b.internal:18000'],
  );
  const ips = JSON.parse(cli('--mode', 'grpc', '--server', '10.0.0.5:18000', '--server', '10.0.0.6:18000').stdout);
  assert.equal(
    ips.xds_servers.map((s: any) => s.server_uri),
    ['ipv4:10.0.0.5:18000,10.0.0.6:18000'],
  );
});

const cli = (...args: string[]) => runCli(['bootstrap', '--config', 'config/fleetxds.yaml', ...args]);

test('CLI: a bootstrap for each mode of the bundled config, for a node that really joins the group', () => {
  for (const mode of ['ads', 'delta', 'rest', 'files', 'grpc']) {
    const r = cli('--group', 'edge', '--mode', mode, '--node-id', 'edge-7');
    assert.is(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.is(out.node.cluster, 'edge');
  }
  const canary = JSON.parse(cli('--group', 'canary-edge', '--mode', 'ads', '--node-id', 'edge-canary-1').stdout);
  assert.is(canary.node.id, 'edge-canary-1');
});

test("CLI: a group's workload becomes the proxy's local cluster, in every Envoy mode and not for gRPC", () => {
  const tree = writeTree({
    'web.yaml':
      'kind: NodeGroup\nname: web\nmatch: { cluster: web }\nworkload: web\n---\n' +
      'kind: Service\nname: web\nendpoints: [{ address: 10.0.1.1:80, zone: a }]\n',
  });
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${tree}\ndatabase: /nonexistent/x.db\ngrpc: { listen: 10.0.0.5:18000 }\n` +
      'rest: { listen: 10.0.0.5:18002 }\nadmin: { listen: 127.0.0.1:0 }\n' +
      `files: { dir: ${join(tempDir(), 'files')} }\n`,
  );
  for (const mode of ['ads', 'delta', 'per-type', 'rest', 'files']) {
    const r = runCli(['bootstrap', '--config', settings, '--group', 'web', '--mode', mode, '--zone', 'a']);
    assert.is(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.is(out.cluster_manager?.local_cluster_name, 'fleetxds/local', mode);
    const local = out.static_resources.clusters.find((c: { name: string }) => c.name === 'fleetxds/local');
    assert.is(local.eds_cluster_config.service_name, 'web', mode);
    if (mode === 'files') assert.match(local.eds_cluster_config.eds_config.path_config_source.path, /web/);
  }
  const grpc = runCli(['bootstrap', '--config', settings, '--group', 'web', '--mode', 'grpc']);
  assert.is(grpc.status, 0, grpc.stderr);
  assert.not.ok(grpc.stdout.includes('fleetxds/local'), grpc.stdout);
});

test('CLI: refuses a node that would land in another group, an unknown group, an unknown mode', () => {
  const wrong = cli('--group', 'canary-edge', '--mode', 'ads', '--node-id', 'edge-1');
  assert.is(wrong.status, 2);
  assert.match(wrong.stderr, /would join group "edge", not "canary-edge"/);
  assert.match(cli('--group', 'nope').stderr, /no node group "nope"/);
  assert.is(cli('--group', 'edge', '--mode', 'carrier-pigeon').status, 2);
});

test('CLI: the node is judged by the node groups the running server serves, not the local tree; --envoy-admin', async () => {
  // The settings name a tree without the group the server serves (as when the server was pointed elsewhere).
  const local = writeTree({ 'a.yaml': 'kind: NodeGroup\nname: edge\nmatch: { cluster: edge }\n' });
  const served = writeTree({
    ...BASE,
    'a.yaml':
      'kind: NodeGroup\nname: edge\nmatch: { cluster: edge }\n---\n' +
      'kind: NodeGroup\nname: canary\npriority: 10\nmatch: { cluster: edge, idPattern: "edge-canary-*" }\n',
  });
  const adminPort = await freePort();
  const settings = join(tempDir(), 'fleetxds.yaml');
  writeFileSync(
    settings,
    `configDir: ${local}\ndatabase: ${join(tempDir(), 'x.db')}\ngrpc: { listen: 127.0.0.1:18000 }\n` +
      `admin: { listen: 127.0.0.1:${adminPort} }\nwatch: { enabled: false }\n`,
  );
  const run = (...args: string[]) => runCli(['bootstrap', '--config', settings, '--mode', 'ads', ...args]);
  const server = await spawnServer(settings, {
    FLEETXDS_CONFIG_DIR: served,
    FLEETXDS_ADMIN_LISTEN: `127.0.0.1:${adminPort}`,
  });
  try {
    const r = run('--group', 'canary', '--node-id', 'edge-canary-1', '--envoy-admin', '127.0.0.1:9911');
    assert.is(r.status, 0, r.stderr);
    assert.is(r.stderr, '', 'nothing to say: the server answered');
    const out = JSON.parse(r.stdout);
    assert.is(out.node.id, 'edge-canary-1');
    assert.equal(out.admin.address.socket_address, { address: '127.0.0.1', port_value: 9911 });
    const wrong = run('--group', 'edge', '--node-id', 'edge-canary-2');
    assert.match(wrong.stderr, /would join group "canary", not "edge"/);
    for (const bad of ['9911', 'host:', ':80', 'h:99999'])
      assert.match(
        run('--group', 'canary', '--node-id', 'edge-canary-1', '--envoy-admin', bad).stderr,
        /--envoy-admin must be HOST:PORT/,
      );
  } finally {
    await server.stop();
  }
  // No server: the local tree decides, and says so.
  const r = run('--group', 'canary', '--node-id', 'edge-canary-1');
  assert.is(r.status, 2);
  assert.match(
    r.stderr,
    /no server answers at http:\/\/127\.0\.0\.1:\d+\/api\/v1\/node-groups; node groups judged by the tree in /,
  );
  assert.match(r.stderr, /no node group "canary"/);
  const edge = run('--group', 'edge', '--node-id', 'edge-1');
  assert.is(edge.status, 0, edge.stderr);
  assert.equal(JSON.parse(edge.stdout).admin.address.socket_address, { address: '127.0.0.1', port_value: 9901 });
});

test('CLI: a server that serves TLS gets a bootstrap with TLS, or a refusal saying which flags are missing', () => {
  const root = tempDir();
  const settings = (tls: string) => {
    const file = join(root, `fleetxds-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(
      file,
      `configDir: ${projectPath('config', 'services')}\ngrpc: { listen: 10.0.0.5:18000${tls} }\n` +
        'rest: { listen: 10.0.0.5:18002 }\nadmin: { listen: 127.0.0.1:0 }\ndatabase: /nonexistent/x.db\n',
    );
    return file;
  };
  const mtls = settings(', tls: { certFile: /x/s.pem, keyFile: /x/s.key, clientCaFile: /x/ca.pem }');
  const run = (config: string, ...args: string[]) =>
    runCli(['bootstrap', '--config', config, '--group', 'edge', '--node-id', 'edge-7', ...args]);
  const cases: [args: string[], error: RegExp][] = [
    [['--mode', 'ads'], /serves TLS \(grpc\.tls\): pass --tls-ca FILE/],
    [['--mode', 'ads', '--tls-ca', '/p/ca.pem'], /requires client certificates .*--tls-cert FILE and --tls-key FILE/],
    [['--mode', 'ads', '--tls-ca', '/p/ca.pem', '--tls-cert', '/p/c.pem'], /--tls-cert and --tls-key go together/],
    [['--mode', 'grpc', '--tls-ca', '/p/ca.pem'], /requires client certificates .*--tls-cert FILE and --tls-key FILE/],
    [['--mode', 'grpc', '--tls-ca', '/p/ca.pem', '--tls-sds', '/p/sds'], /gRPC applications take no --tls-sds/],
    [['--mode', 'rest', '--tls-ca', '/p/ca.pem'], /does not serve TLS to this mode \(no rest\.tls\)/],
  ];
  for (const [args, error] of cases) {
    const r = run(mtls, ...args);
    assert.is(r.status, 2, args.join(' '));
    assert.match(r.stderr, error, args.join(' '));
  }
  // gRFC A65: gRPC applications reach the server with TLS channel credentials that re-read the files.
  const grpc = run(mtls, '--mode', 'grpc', '--tls-ca', '/p/ca.pem', '--tls-cert', '/p/c.pem', '--tls-key', '/p/c.key');
  assert.is(grpc.status, 0, grpc.stderr);
  assert.equal(JSON.parse(grpc.stdout).xds_servers[0].channel_creds, [
    {
      type: 'tls',
      config: {
        ca_certificate_file: '/p/ca.pem',
        certificate_file: '/p/c.pem',
        private_key_file: '/p/c.key',
        refresh_interval: '60s',
      },
    },
  ]);
  const ok = run(mtls, '--mode', 'ads', '--tls-ca', '/p/ca.pem', '--tls-cert', '/p/c.pem', '--tls-key', '/p/c.key');
  assert.is(ok.status, 0, ok.stderr);
  const socket = JSON.parse(ok.stdout).static_resources.clusters[0].transport_socket.typed_config;
  assert.equal(socket.common_tls_context.validation_context.match_typed_subject_alt_names, [
    { san_type: 'IP_ADDRESS', matcher: { exact: '10.0.0.5' } },
  ]);
  assert.is(socket.sni, undefined, 'no SNI for an IP address');
  assert.equal(socket.common_tls_context.alpn_protocols, ['h2']);
  const named = run(
    mtls,
    '--mode',
    'ads',
    '--tls-ca',
    '/p/ca.pem',
    '--tls-cert',
    '/p/c.pem',
    '--tls-key',
    '/p/c.key',
    '--server',
    'xds.example:18000',
  );
  assert.is(JSON.parse(named.stdout).static_resources.clusters[0].transport_socket.typed_config.sni, 'xds.example');
  const plain = run(settings(''), '--mode', 'ads', '--tls-ca', '/p/ca.pem');
  assert.match(plain.stderr, /does not serve TLS to this mode \(no grpc\.tls\)/);

  // The CA and the proxy's own certificate through file-based SDS: the bootstrap names the SDS files, which name the files.
  const sdsDir = join(root, 'envoy-sds');
  const flags = ['--tls-ca', '/p/ca.pem', '--tls-cert', '/p/c.pem', '--tls-key', '/k/c.key', '--tls-sds', sdsDir];
  const sds = run(mtls, '--mode', 'ads', ...flags);
  assert.is(sds.status, 0, sds.stderr);
  const context = JSON.parse(sds.stdout).static_resources.clusters[0].transport_socket.typed_config.common_tls_context;
  const source = (name: string) => ({
    name,
    sds_config: { path_config_source: { path: join(sdsDir, `${name}.json`) }, resource_api_version: 'V3' },
  });
  assert.is(context.tls_certificates, undefined, 'no certificate read once at start');
  assert.is(context.validation_context, undefined, 'no CA read once at start');
  assert.equal(context.tls_certificate_sds_secret_configs, [source('fleetxds-client-certificate')]);
  assert.equal(context.combined_validation_context, {
    default_validation_context: {
      match_typed_subject_alt_names: [{ san_type: 'IP_ADDRESS', matcher: { exact: '10.0.0.5' } }],
    },
    validation_context_sds_secret_config: source('fleetxds-server-ca'),
  });
  const secret = (name: string) => {
    const file = join(sdsDir, `${name}.json`);
    assert.is(statSync(file).mode & 0o777, 0o644, 'paths only: readable by the proxy');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(encodeJson('envoy.service.discovery.v3.DiscoveryResponse', doc).issues, []);
    assert.is(doc.resources.length, 1, 'one Secret per file, as Envoy takes them');
    return doc.resources[0];
  };
  assert.equal(secret('fleetxds-server-ca'), {
    '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
    name: 'fleetxds-server-ca',
    validation_context: { trusted_ca: { filename: '/p/ca.pem' }, watched_directory: { path: '/p' } },
  });
  assert.equal(secret('fleetxds-client-certificate').tls_certificate, {
    certificate_chain: { filename: '/p/c.pem' },
    private_key: { filename: '/k/c.key' },
    // Not in one directory: each file is watched on its own.
  });
  // Without client certificates (TLS, not mTLS): the CA alone.
  const tlsOnly = settings(', tls: { certFile: /x/s.pem, keyFile: /x/s.key }');
  const caDir = join(root, 'ca-only');
  const caOnly = run(tlsOnly, '--mode', 'ads', '--tls-ca', '/p/ca.pem', '--tls-sds', caDir);
  assert.is(caOnly.status, 0, caOnly.stderr);
  assert.ok(existsSync(join(caDir, 'fleetxds-server-ca.json')));
  assert.not.ok(existsSync(join(caDir, 'fleetxds-client-certificate.json')));
});

test.run();
