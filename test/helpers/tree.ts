import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { checkTree } from '../../src/compile/check-tree.ts';
import type { Diagnostic } from '../../src/shared/diagnostics.ts';

const made: string[] = [];
process.on('exit', () => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

export function tempDir(prefix = 'fleetxds-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/** Writes `files` (relative path -> content) into a fresh temp dir and returns it. */
export function writeTree(files: Record<string, string>, dir = tempDir()): string {
  for (const [rel, text] of Object.entries(files)) {
    const p = join(dir, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
  return dir;
}

export async function diagnosticsOf(files: Record<string, string>): Promise<Diagnostic[]> {
  return (await checkTree(writeTree(files))).diagnostics;
}

/** A small valid tree to start from; tests add or break one thing each. */
export const BASE: Record<string, string> = {
  'services.yaml': `kind: Service
name: api
protocol: http2
endpoints:
  - address: 10.0.0.1:8080
  - address: 10.0.0.2:8080
---
kind: Service
name: web
endpoints:
  - address: 10.0.1.1:80
`,
  'edge.yaml': `kind: Listener
name: edge
port: 8080
virtualHosts: [site]
---
kind: VirtualHost
name: site
domains: [example.com]
routes:
  - match: { prefix: /api }
    to: api
  - to: web
`,
};

/**
 * BASE's edge listener requiring a token whose keys have id `kid` (its JWT settings an extension
 * config, `edge/envoy.filters.http.jwt_authn`); `requireOnApi`: the /api route names a requirement.
 */
export function policyEdgeTree(kid: string, requireOnApi = false): Record<string, string> {
  const jwks =
    `{"keys":[{"kty":"EC","crv":"P-256","kid":"${kid}","x":"JBPvOUc1PozJ1I5A1K5WtzjMZNmlKXL1UTUqQL7iTGs",` +
    '"y":"Wjh-OOdnOoQMCm8zXar7XfFxQjHaCfFFRCpSZRosZQI"}]}';
  const edge = BASE['edge.yaml']!.replace(
    'virtualHosts: [site]\n',
    `virtualHosts: [site]\njwt: { providers: [{ name: corp, keys: { inline: '${jwks}' } }] }\n`,
  );
  return {
    'edge.yaml': requireOnApi ? edge.replace('    to: api\n', '    to: api\n    jwt: { require: [corp] }\n') : edge,
  };
}
