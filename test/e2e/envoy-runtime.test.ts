/**
 * Runtime values over RTDS (`kind: Runtime`) through real Envoy 1.40 and 1.36, each on the bootstrap
 * fleetxds generates (its RTDS layer under the admin layer). A route fails every request by its
 * fault; a Runtime value (`fault.http.abort.abort_percent: 0`, the fault filter's own runtime key)
 * lets them through, and removing it brings the failures back: no listener, route or cluster is
 * updated for either. Rolling back to the version with the value restores it. A runtime flag the
 * connected Envoy 1.36 does not know is warned about, for its node group alone, from the release
 * its proxy reports.
 */
import type { Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { httpGet, reportSetupFailure } from '../helpers/envoy-lab.ts';
import { plainBackend, perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { waitFor } from '../helpers/process.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';
import { ENVOY_RUNTIME_FLAGS } from '../../src/model/envoy-runtime-flags.ts';
import { releaseKnows } from '../../src/model/runtime-flags.ts';
import { formatDiagnostic } from '../../src/shared/diagnostics.ts';

let app: RunningApp;
let tree: string;
let base: string[];
const envoys: EnvoyProcess[] = [];
const ports = new Map<EnvoyVersion, number>();
const servers: Server[] = [];

const RUNTIME =
  'kind: Runtime\nname: let-through\ngroups: [g140, g136]\nvalues: { fault.http.abort.abort_percent: 0 }\n';

test.before(async () => {
  try {
    const backend = await plainBackend(servers);
    const releases = await perRelease(freePort, (_v, p, g) => [siteListenerYaml(g, g, p)]);
    for (const [v, p] of releases.ports) ports.set(v, p);
    base = [
      `kind: Service\nname: api\nendpoints: [{ address: 127.0.0.1:${backend} }]\n`,
      'kind: VirtualHost\nname: site\ndomains: ["*"]\nroutes:\n' +
        '  - { match: { prefix: /ready }, to: api }\n' +
        '  - { to: api, fault: { abort: { status: 503, percent: 100 } } }\n',
      ...releases.docs,
    ];
    tree = writeTree({ 'runtime.yaml': base.join('---\n') });
    app = await startServer(tree);
    envoys.push(...(await startEnvoys(app, (v) => httpGet(ports.get(v)!, '/ready').then((r) => r.status === 200))));
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  for (const s of servers) s.close();
});

async function apply(docs: string[]): Promise<void> {
  writeTree({ 'runtime.yaml': docs.join('---\n') }, tree);
  assert.is(((await app.reload()) as { status: string }).status, 'applied');
}

/** Every release answers `status` at /, and its Envoy's runtime has the value `want` (undefined: none). */
async function allAnswer(status: number, want: string | undefined): Promise<void> {
  for (const [i, v] of ENVOY_VERSIONS.entries()) {
    const runtimeNow = async () => (await fetch(`http://127.0.0.1:${envoys[i]!.adminPort}/runtime`)).text();
    await waitFor(
      `Envoy ${v} answers ${status}`,
      async () => (await httpGet(ports.get(v)!, '/')).status === status,
      10_000,
    ).catch(async (e: Error) => {
      throw new Error(
        `${e.message}: ${JSON.stringify(await envoys[i]!.stats('runtime|rtds'))} ${await runtimeNow()} ${envoys[
          i
        ]!.log()
          .split('\n')
          .filter((l) => /rtds|runtime|Runtime/.test(l))
          .slice(-5)
          .join('\n')}`,
      );
    });
    const runtime = (await (await fetch(`http://127.0.0.1:${envoys[i]!.adminPort}/runtime`)).json()) as {
      entries: Record<string, { final_value: string; layer_values: string[] }>;
    };
    assert.is(runtime.entries['fault.http.abort.abort_percent']?.final_value, want, `Envoy ${v}`);
  }
}

/** Updates Envoy counted for listeners, routes and clusters (none may move on a runtime change). */
async function updates(): Promise<string> {
  const out: string[] = [];
  for (const e of envoys) {
    const s = await e.stats(
      '(listener_manager.listener_(modified|added)|cluster_manager.cluster_(modified|added)|rds\\..*update_success)$',
    );
    out.push(JSON.stringify(Object.entries(s).sort()));
  }
  return out.join('\n');
}

test('a runtime value changes behaviour without a listener, route or cluster update; removing it restores it', async () => {
  await allAnswer(503, undefined);
  const before = await updates();
  // The counters compared are there to move: every Envoy has added its listeners and routes.
  assert.match(before, /listener_manager\.listener_added/);
  assert.match(before, /\.rds\..*update_success/);
  await apply([...base, RUNTIME]);
  await allAnswer(200, '0');
  await apply(base);
  await allAnswer(503, undefined);
  assert.is(await updates(), before);
});

test('a rollback to the version with the value serves it again', async () => {
  const versions = (await (await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/versions`)).json()) as {
    versions: { id: number }[];
  };
  // Newest first: the version without the value, the one with it, the first.
  const withValue = versions.versions[1]!.id;
  const r = await fetch(`http://127.0.0.1:${app.adminPort}/api/v1/rollback`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ versionId: withValue }),
  });
  assert.is(r.status, 200, await r.text());
  await allAnswer(200, '0');
});

test('a runtime flag the connected Envoy 1.36 does not know: a warning for its node group alone', async () => {
  const flag = Object.keys(ENVOY_RUNTIME_FLAGS).find(
    (k) => k.startsWith('envoy.reloadable_features.') && releaseKnows('1.40', k) && !releaseKnows('1.36', k),
  )!;
  await apply([...base, `kind: Runtime\nname: newer\ngroups: [g140, g136]\nvalues: { ${flag}: true }\n`]);
  const warnings = app.stores.revisions.latest()!.warnings.map((d) => formatDiagnostic(d));
  const about = warnings.filter((w) => w.includes(flag));
  assert.is(about.length, 1, warnings.join('\n'));
  assert.match(about[0]!, /^runtime\.yaml:\d+:\d+: warning FXDS_CLIENT_COMPAT: Runtime\/newer /);
  assert.match(about[0]!, /node group "g136" has proxies .* ignores it: Envoy 1\.36 \(1 node\)$/);
  await apply(base);
});

test.run();
