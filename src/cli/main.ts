#!/usr/bin/env -S node --max-semi-space-size=16
/**
 * fleetxds command line: thin wrappers over the stages.
 *   serve    [--config FILE]                  run the server
 *   validate DIR [--json]                      check a tree (exit 1 on errors); for CI and git hooks
 *   render   DIR [--group G] [--kind K]        print the Envoy resources a tree produces, as JSON
 *   schema   [--out FILE]                      print/write the JSON Schema for editors
 *   bootstrap --group G --mode ads|delta|per-type|per-type-delta|rest|files|grpc   print a proxy bootstrap
 */
import * as nodeModule from 'node:module';
import { parseArgs, type ParseArgsConfig } from 'node:util';

// The first thing this file does is to refuse a Node too old to run the rest, by name: every
// command is imported when run, so an older Node gets this message instead of a link error from
// deep inside a dependency. (The namespace import keeps this file itself linkable on old Nodes.)
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 22)) {
  process.stderr.write(
    `fleetxds needs Node.js 22.22 or newer (24 LTS recommended); this is ${process.version}.\n` +
      'From a checkout, `npm run fleetxds -- <command>` fetches a supported Node once and runs the command with it.\n',
  );
  process.exit(2);
}

// V8 keeps the compiled code of every module (in NODE_COMPILE_CACHE, or the temp directory) so a
// restart does not compile them again. Commands are imported when run, so `serve` loads nothing the
// other commands need, and the other way round.
nodeModule.enableCompileCache();

// `fleetxds history | head -3`: a reader that stops reading ends the command quietly, as Unix tools do.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const USAGE = `usage: fleetxds <command> [options]   (fleetxds --version: version and commit)
  serve    [--config FILE]                      run the xDS server (FILE: /etc/fleetxds/fleetxds.yaml
                                                installed, config/fleetxds.yaml in a checkout)
  validate <dir> [--json]                       validate a config tree; exit 1 if invalid
  render   <dir> [--group NAME] [--kind KIND]   print the Envoy resources the tree produces
  schema   [--out FILE]                         print (or write) the JSON Schema of the YAML model
  bootstrap [--config FILE] --group NAME --mode ads|delta|per-type|per-type-delta|rest|files|grpc
            [--node-id ID] [--node-cluster C] [--server HOST:PORT ...] (one --server per replica)
            [--region R] [--zone Z] [--sub-zone S]  (where the node runs: node.locality)
            [--envoy-admin HOST:PORT]           (Envoy's admin interface; default 127.0.0.1:9901)
            [--tls-ca FILE [--tls-server-name NAME] [--tls-cert FILE --tls-key FILE] [--tls-sds DIR]]
                                                (the server serves TLS; --tls-sds: write file-based SDS files
                                                for the CA and the proxy's certificate into DIR, so that Envoy
                                                takes renewals in place)
                                                print an Envoy (or proxyless gRPC) bootstrap for a node of that group,
                                                judged by the running server's node groups
  git-setup --base DIR [--branch main] [--subdir PATH] [--keep 20]
                                                set up a bare repo whose hooks validate pushes and deploy them
  apply [--config FILE]                         apply the config directory now, without waiting for the watcher
                                                (a change known to be complete); exit 1 when it is refused
  history | diff A B [--json] | rollback VERSION | pin GROUP VERSION | unpin GROUP   [--config FILE]
                                                version history (diff: the Envoy resources that changed, line
                                                by line) and rollback, through the running server's admin API
  rollout status|promote|halt|resume|abort  [--config FILE]
                                                the staged rollout under way (see kind: Rollout)
  overrides [--json] [--config FILE]            the tree's expiring overrides (until, for): when each lapses
  explain NODE_ID [--type cluster|endpoint|listener|route|secret] [--json] [--config FILE]
                                                what the node is served, per type, and why (pins, rollout
                                                stages, NACKs, warming holds, catch-up, REST polls)
  token                                         print a new bearer token and the sha256 digest for the settings
  register --service NAME --address IP:PORT --server URL [--check URL|tcp] [--interval 10s] [--weight N]
           [--region R] [--zone Z] [--sub-zone S] [--token-file F | --tls-cert F --tls-key F] [--tls-ca F]
                                                register an endpoint, heartbeat with its check, drain on stop`;

/** Every option of every command (parseArgs refuses others). */
const OPTIONS = {
  config: { type: 'string' },
  json: { type: 'boolean', default: false },
  group: { type: 'string' },
  kind: { type: 'string' },
  type: { type: 'string' },
  out: { type: 'string' },
  mode: { type: 'string' },
  'node-id': { type: 'string' },
  'node-cluster': { type: 'string' },
  'envoy-admin': { type: 'string' },
  server: { type: 'string', multiple: true },
  'tls-ca': { type: 'string' },
  'tls-server-name': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-sds': { type: 'string' },
  base: { type: 'string' },
  branch: { type: 'string' },
  subdir: { type: 'string' },
  keep: { type: 'string' },
  'git-dir': { type: 'string' },
  envoy: { type: 'string', multiple: true },
  previous: { type: 'string' },
  service: { type: 'string' },
  address: { type: 'string' },
  check: { type: 'string' },
  interval: { type: 'string' },
  weight: { type: 'string' },
  region: { type: 'string' },
  zone: { type: 'string' },
  'sub-zone': { type: 'string' },
  'token-file': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

async function main(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: OPTIONS,
  });
  // An installed release reads /etc/fleetxds/fleetxds.yaml unless told otherwise; a checkout its example.
  const config = values.config ?? (await import('./version.ts')).defaultSettingsFile();
  if (command === '--version' || command === 'version') {
    process.stdout.write(`${(await import('./version.ts')).versionLine()}\n`);
    return 0;
  }
  if (values.help || !command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command ? 0 : 2;
  }
  switch (command) {
    case 'serve':
      return (await import('./serve.ts')).serveCommand(config);
    case 'validate':
      if (positionals.length !== 1) break;
      return (await import('./validate.ts')).validateCommand(positionals[0]!, {
        json: values.json,
        envoy: values.envoy,
        config: rest.includes('--config') ? config : undefined,
        previous: values.previous,
      });
    case 'render':
      if (positionals.length !== 1) break;
      return (await import('./render.ts')).renderCommand(positionals[0]!, { group: values.group, kind: values.kind });
    case 'schema':
      return (await import('./schema.ts')).schemaCommand(values.out);
    case 'git-setup':
      return (await import('./git-setup.ts')).gitSetupCommand({
        base: values.base,
        branch: values.branch,
        subdir: values.subdir,
        keep: values.keep,
        envoy: values.envoy,
      });
    case 'release-meta':
      return (await import('./git-setup.ts')).releaseMetaCommand(values['git-dir'], positionals[0]);
    case 'history':
    case 'diff':
    case 'apply':
    case 'rollback':
    case 'pin':
    case 'unpin':
    case 'rollout':
    case 'overrides':
    case 'explain':
      return (await import('./admin-client.ts')).adminCommand(command, positionals, config, {
        type: values.type,
        json: values.json,
      });
    case 'token': {
      const t = (await import('../security/tokens.ts')).newToken();
      process.stdout.write(
        `token:  ${t.token}\nsha256: ${t.sha256}\n(put the sha256 in admin.tokens or rest.tokens; give the token ` +
          `to the client)\n`,
      );
      return 0;
    }
    case 'register':
      return (await import('./register.ts')).registerCommand({
        service: values.service,
        address: values.address,
        server: values.server?.[0],
        check: values.check,
        interval: values.interval,
        weight: values.weight,
        region: values.region,
        zone: values.zone,
        subZone: values['sub-zone'],
        tokenFile: values['token-file'],
        tlsCa: values['tls-ca'],
        tlsCert: values['tls-cert'],
        tlsKey: values['tls-key'],
      });
    case 'bootstrap':
      return (await import('./bootstrap.ts')).bootstrapCommand({
        config: config,
        group: values.group,
        mode: values.mode,
        nodeId: values['node-id'],
        nodeCluster: values['node-cluster'],
        region: values.region,
        zone: values.zone,
        subZone: values['sub-zone'],
        server: values.server,
        tlsCa: values['tls-ca'],
        tlsServerName: values['tls-server-name'],
        tlsCert: values['tls-cert'],
        tlsSds: values['tls-sds'],
        tlsKey: values['tls-key'],
        envoyAdmin: values['envoy-admin'],
      });
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`fleetxds: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
