/**
 * Real Envoy on rendered files (path-based subscriptions), in both layouts: files replaced one by
 * one with renames, and watched_directory (a version directory swapped in by one symlink rename).
 * Envoy starts from `fleetxds bootstrap --mode files`, routes HTTP and HTTPS (SNI, SDS from files),
 * follows YAML edits (a runtime value too, from the rendered RTDS file, and a JWT policy from its
 * rendered extension config file), rejects nothing and holds
 * the versions of the files.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dumpedVersions } from '../helpers/envoy.ts';
import type { KeyObject } from 'node:crypto';
import { httpGet, httpsGet, labSpecs, reportSetupFailure, startLab } from '../helpers/envoy-lab.ts';
import { ecKeys, jwks, signedToken, TEST_ISSUER } from '../helpers/jwt.ts';
import { waitFor } from '../helpers/process.ts';

for (const layout of ['files', 'watched_directory'] as const) {
  test(`files (${layout}): Envoy routes by the rendered files and follows endpoint and split changes`, async () => {
    const [spec] = await labSpecs([['files', '1.40']]);
    const lab = await startLab([spec!], {
      settings: { files: { enabled: true, dir: 'envoy-files', format: layout === 'files' ? 'json' : 'yaml', layout } },
    });
    try {
      const cds = join(
        lab.root,
        'envoy-files',
        spec!.id,
        layout === 'files' ? '' : 'current',
        `cds.${layout === 'files' ? 'json' : 'yaml'}`,
      );
      // Envoy refuses a path that does not exist when its subscription starts.
      await waitFor('rendered files', () => existsSync(cds));
      const envoy = await lab.startEnvoy(spec!).catch(reportSetupFailure);
      await lab.routesTo(spec!, '/split', 'A');
      const api = await httpsGet(spec!.httpsPort, '/ep', 'api.test', lab.pki.caPem);
      assert.equal([api.status, api.body, api.peerCn], [200, 'A', 'api']);

      const services = lab.docs['services.yaml'] as any[];
      services.find((d) => d.name === 'ep').endpoints = [{ address: `127.0.0.1:${lab.backends.B!.port}` }];
      lab.write('services.yaml', services);
      await lab.routesTo(spec!, '/ep', 'B');
      const routes = lab.docs['routes.yaml'] as any[];
      routes[0].routes[0].split = [
        { service: 'a', weight: 0 },
        { service: 'b', weight: 100 },
      ];
      lab.write('routes.yaml', routes);
      await lab.routesTo(spec!, '/split', 'B');

      // The runtime layers from their rendered files (rtds/<layer>.json), as the bootstrap declares them.
      lab.write('runtime.yaml', [{ kind: 'Runtime', name: 'flags', groups: [spec!.id], values: { 'lab.flag': 7 } }]);
      await waitFor('the runtime value in Envoy', async () => {
        const runtime = (await (await fetch(`http://127.0.0.1:${envoy.adminPort}/runtime`)).json()) as {
          entries: Record<string, { final_value: string }>;
        };
        return runtime.entries['lab.flag']?.final_value === '7';
      });

      assert.is(await envoy.rejected(), 0, envoy.log().slice(-2000));
      const served = (await lab.server.admin('/api/v1/config')).groups[spec!.id];
      const dumped = dumpedVersions(await envoy.configDump());
      for (const r of served.cluster.resources)
        assert.is(dumped.cluster![r.name], served.cluster.version, `cluster ${r.name}`);
      for (const r of served.listener.resources)
        assert.is(dumped.listener![r.name], served.listener.version, `listener ${r.name}`);

      // A policy filter's config from its rendered file (ecds/<name>.json): a token signed by a key
      // the listener's JWKS does not hold is refused until the JWKS is edited to hold it. Last: the
      // filter's arrival updates the listener in place, after which Envoy's config dump keeps the
      // listener's earlier version.
      const stranger = ecKeys();
      const path = `/split?token=${signedToken(stranger.privateKey)}`;
      const listeners = lab.docs['listeners.yaml'] as any[];
      const http = listeners.find((d) => d.name === `${spec!.id}-http`);
      const jwt = (pub: KeyObject) => ({
        providers: [{ name: 'corp', issuer: TEST_ISSUER, keys: { inline: jwks(pub) }, from: { query: ['token'] } }],
        require: ['corp'],
        optional: true,
      });
      http.jwt = jwt(ecKeys().publicKey);
      lab.write('listeners.yaml', listeners);
      await waitFor('the token refused', async () => (await httpGet(spec!.httpPort, path)).status === 401);
      http.jwt = jwt(stranger.publicKey);
      lab.write('listeners.yaml', listeners);
      await waitFor('the token taken', async () => (await httpGet(spec!.httpPort, path)).status === 200);
      assert.is(await envoy.rejected(), 0, envoy.log().slice(-2000));
    } finally {
      await lab.stop();
    }
  });
}

test.run();
