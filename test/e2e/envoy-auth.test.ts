/**
 * JWT authentication and external authorization through real Envoy 1.40 and 1.36 (one Envoy each):
 *  - tokens signed in the test by a key the JWKS holds (inline in the tree, or fetched by Envoy
 *    from a JWKS served by a Service): valid -> 200 with the claim header at the backend; expired,
 *    unsigned, signed by another key or missing -> 401, wrong audience -> 403 (Envoy's answer); a health route skips JWT;
 *    an optional route lets a request without a token through and refuses a bad one;
 *  - external authorization over gRPC and over HTTP: a denied request gets 403 and the backend sees
 *    nothing; an allowed one carries the header the server added; a route that turns it off is not
 *    checked; with the server down, failOpen decides (200 open, 403 closed).
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningApp } from '../../src/app/app.ts';
import { ENVOY_VERSIONS, freePort, type EnvoyProcess, type EnvoyVersion } from '../helpers/envoy.ts';
import { reportSetupFailure } from '../helpers/envoy-lab.ts';
import { freePorts, listenOn, perRelease, siteListenerYaml, startEnvoys, stopAll } from '../helpers/envoy-releases.ts';
import { startAuthorizationServer, type GrpcTestServer } from '../helpers/envoy-services.ts';
import { startServer } from '../helpers/server.ts';
import { writeTree } from '../helpers/tree.ts';

interface Ports {
  jwt: number;
  grpcAuthz: number;
  httpAuthz: number;
  downOpen: number;
  downClosed: number;
}

const ISSUER = 'https://issuer.test';
let app: RunningApp;
let authz: GrpcTestServer;
let backendCalls = 0;
const servers: net.Server[] = [];
const listen = (server: net.Server, host?: string) => listenOn(server, servers, host);
const envoys: EnvoyProcess[] = [];
const byRelease = new Map<EnvoyVersion, Ports>();

const corpKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const remoteKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const strangerKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

function jwks(pub: KeyObject, kid: string): string {
  return JSON.stringify({ keys: [{ ...pub.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }] });
}

/** A compact JWS; `key` undefined: alg none, no signature. */
function token(claims: Record<string, unknown>, key: KeyObject | undefined, kid = 'corp'): string {
  const now = Math.floor(Date.now() / 1000);
  const body = { iss: ISSUER, aud: 'api', sub: 'alice', iat: now, exp: now + 600, ...claims };
  const head = b64url(JSON.stringify(key ? { alg: 'ES256', kid, typ: 'JWT' } : { alg: 'none', typ: 'JWT' }));
  const input = `${head}.${b64url(JSON.stringify(body))}`;
  if (!key) return `${input}.`;
  return `${input}.${b64url(sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }))}`;
}

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; seen: Record<string, string>; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => {
        let seen: Record<string, string> = {};
        try {
          seen = JSON.parse(body) as Record<string, string>;
        } catch {
          // Envoy's own answers are text.
        }
        resolve({ status: res.statusCode!, seen, headers: res.headers });
      });
    });
    req.on('error', reject);
  });
}

test.before(async () => {
  try {
    const backend = await listen(
      http.createServer((req, res) => {
        backendCalls++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(req.headers));
      }),
    );
    const jwksPort = await listen(
      http.createServer((req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(req.url === '/jwks.json' ? jwks(remoteKey.publicKey, 'remote') : '{}');
      }),
    );
    // HTTP authorization: x-key "let-me-in" passes as alice, anything else is refused with a reason.
    const httpAuthz = await listen(
      http.createServer((req, res) => {
        if (req.headers['x-key'] === 'let-me-in') {
          res.setHeader('x-authz-user', 'alice');
          res.end();
        } else {
          res.statusCode = 403;
          res.setHeader('x-authz-reason', 'bad key');
          res.end('no');
        }
      }),
    );
    authz = await startAuthorizationServer((h) =>
      h['x-key'] === 'let-me-in' ? { allow: true, add: { 'x-authz-user': 'bob' } } : { allow: false, status: 403 },
    );
    const closed = await freePort();
    const docs = [
      `kind: Service\nname: web\nendpoints: [{ address: 127.0.0.1:${backend} }]\n`,
      `kind: Service\nname: jwks\nendpoints: [{ address: 127.0.0.1:${jwksPort} }]\n`,
      `kind: Service\nname: authz-grpc\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${authz.port} }]\n`,
      `kind: Service\nname: authz-http\nendpoints: [{ address: 127.0.0.1:${httpAuthz} }]\n`,
      `kind: Service\nname: authz-down\nprotocol: grpc\nendpoints: [{ address: 127.0.0.1:${closed} }]\n`,
      `kind: VirtualHost
name: jwt-site
domains: ["*"]
routes:
  - { match: { prefix: /healthz }, to: web, jwt: false }
  - { match: { prefix: /optional }, to: web, jwt: { require: [corp], optional: true } }
  - { match: { prefix: /remote }, to: web, jwt: { require: [remote] } }
  - to: web
`,
      `kind: VirtualHost
name: site
domains: ["*"]
routes:
  - { match: { prefix: /public }, to: web, extAuth: false }
  - to: web
`,
    ];
    const releases = await perRelease(
      freePorts('jwt', 'grpcAuthz', 'httpAuthz', 'downOpen', 'downClosed'),
      (_v, p, g) => [
        `kind: Listener
name: jwt-${g}
address: 127.0.0.1
port: ${p.jwt}
groups: [${g}]
virtualHosts: [jwt-site]
jwt:
  providers:
    - name: corp
      issuer: ${ISSUER}
      audiences: [api]
      keys: { inline: '${jwks(corpKey.publicKey, 'corp')}' }
      claimHeaders: { x-user: sub }
    - name: remote
      issuer: ${ISSUER}
      keys: { remote: { service: jwks, path: /jwks.json, cacheDuration: 5m } }
      claimHeaders: { x-user: sub }
  require: [corp]
`,
        siteListenerYaml(`grpc-authz-${g}`, g, p.grpcAuthz, 'extAuth: { service: authz-grpc, timeout: 1s }\n'),
        siteListenerYaml(
          `http-authz-${g}`,
          g,
          p.httpAuthz,
          'extAuth: { service: authz-http, protocol: http, timeout: 1s, requestHeaders: [x-key], ' +
            'upstreamHeaders: [x-authz-user], clientHeaders: [x-authz-reason] }\n',
        ),
        siteListenerYaml(`open-${g}`, g, p.downOpen, 'extAuth: { service: authz-down, failOpen: true }\n'),
        siteListenerYaml(`closed-${g}`, g, p.downClosed, 'extAuth: { service: authz-down }\n'),
      ],
    );
    for (const [v, p] of releases.ports) byRelease.set(v, p);
    app = await startServer(writeTree({ 'auth.yaml': [...docs, ...releases.docs].join('---\n') }));
    envoys.push(
      ...(await startEnvoys(app, (v) => get(byRelease.get(v)!.grpcAuthz, '/public').then((r) => r.status === 200))),
    );
  } catch (err) {
    reportSetupFailure(err);
  }
});

test.after(async () => {
  await stopAll(envoys, app);
  await authz?.close();
  for (const s of servers) s.close();
});

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

test('a valid token passes with its claim in a header; bad and missing tokens get 401', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.jwt;
    const ok = await get(p, '/x', bearer(token({}, corpKey.privateKey)));
    assert.is(ok.status, 200, `Envoy ${v}: a valid token`);
    assert.is(ok.seen['x-user'], 'alice', `Envoy ${v}: the sub claim reaches the backend`);
    assert.is(ok.seen.authorization, undefined, `Envoy ${v}: the token is not forwarded`);
    const now = Math.floor(Date.now() / 1000);
    // Envoy answers a verified token for another audience 403 (authentic, not for this API).
    const cases: [string, Record<string, string>, number][] = [
      ['expired', bearer(token({ exp: now - 3600, iat: now - 7200 }, corpKey.privateKey)), 401],
      ['wrong audience', bearer(token({ aud: 'billing' }, corpKey.privateKey)), 403],
      ['unsigned', bearer(token({}, undefined)), 401],
      ['signed by another key', bearer(token({}, strangerKey.privateKey)), 401],
      ['missing', {}, 401],
    ];
    for (const [what, headers, status] of cases)
      assert.is((await get(p, '/x', headers)).status, status, `Envoy ${v}: ${what} -> ${status}`);
    assert.is((await get(p, '/healthz')).status, 200, `Envoy ${v}: the health route skips JWT`);
  }
});

test('an optional route lets a request without a token through and refuses a bad token', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.jwt;
    assert.is((await get(p, '/optional')).status, 200, `Envoy ${v}: no token`);
    assert.is((await get(p, '/optional', bearer(token({}, undefined)))).status, 401, `Envoy ${v}: bad token`);
    const ok = await get(p, '/optional', bearer(token({}, corpKey.privateKey)));
    assert.is(ok.seen['x-user'], 'alice');
  }
});

test('keys fetched by Envoy from a JWKS a Service serves verify tokens; the inline keys do not apply there', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.jwt;
    const ok = await get(p, '/remote', bearer(token({}, remoteKey.privateKey, 'remote')));
    assert.is(ok.status, 200, `Envoy ${v}: signed by the remote JWKS key`);
    assert.is(ok.seen['x-user'], 'alice');
    assert.is((await get(p, '/remote', bearer(token({}, corpKey.privateKey)))).status, 401, `Envoy ${v}`);
  }
});

test('gRPC external authorization: denied requests never reach the backend; allowed ones carry its header', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.grpcAuthz;
    const before = backendCalls;
    const denied = await get(p, '/x', { 'x-key': 'wrong' });
    assert.is(denied.status, 403, `Envoy ${v}: denied`);
    assert.is(backendCalls, before, `Envoy ${v}: the backend saw nothing`);
    const ok = await get(p, '/x', { 'x-key': 'let-me-in' });
    assert.is(ok.status, 200);
    assert.is(ok.seen['x-authz-user'], 'bob', `Envoy ${v}: the server's header reaches the backend`);
    const calls = authz.calls;
    assert.is((await get(p, '/public')).status, 200);
    assert.is(authz.calls, calls, `Envoy ${v}: a route with extAuth: false is not checked`);
  }
});

test('HTTP external authorization: the allowed headers go to the backend and to a refused client', async () => {
  for (const v of ENVOY_VERSIONS) {
    const p = byRelease.get(v)!.httpAuthz;
    const before = backendCalls;
    const denied = await get(p, '/x', { 'x-key': 'wrong' });
    assert.is(denied.status, 403, `Envoy ${v}: denied`);
    assert.is(denied.headers['x-authz-reason'], 'bad key', `Envoy ${v}: the reason reaches the client`);
    assert.is(backendCalls, before);
    const ok = await get(p, '/x', { 'x-key': 'let-me-in' });
    assert.is(ok.status, 200, `Envoy ${v}: allowed`);
    assert.is(ok.seen['x-authz-user'], 'alice');
  }
  // The request headers are configured with the current field, not the deprecated one.
  for (const e of envoys) assert.not.match(e.log(), /deprecated option .*AuthorizationRequest\.allowed_headers/);
});

test('with the authorization server down, failOpen decides', async () => {
  for (const v of ENVOY_VERSIONS) {
    assert.is((await get(byRelease.get(v)!.downOpen, '/x')).status, 200, `Envoy ${v}: fail open`);
    assert.is((await get(byRelease.get(v)!.downClosed, '/x')).status, 403, `Envoy ${v}: fail closed`);
  }
  for (const e of envoys) assert.is(await e.rejected(), 0);
});

test.run();
