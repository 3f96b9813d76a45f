/**
 * Generates realistic config trees for benchmarks: services with several endpoints, health checks
 * and circuit breakers, spread over many files; virtual hosts of `routesPerVhost` routes; one
 * listener per node group.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TreeSpec {
  services: number;
  servicesPerFile?: number;
  routesPerVhost?: number;
  groups?: number;
  /**
   * Every route, listener and service using the HTTP features an operator turns on (affinity,
   * header edits, retries with backoff, mirroring, regex rewrites, CORS, compression, tracing, an
   * access log), and every listener and virtual host the
   * edge protections (access rules, JWT, external authorization, local and global rate limits);
   * and a node group of gRPC applications (gRPC services, aggregates, xDS-enabled servers).
   */
  features?: boolean;
  /** sha256 of a token: every service takes registered endpoints with it (ttl 30s). */
  registrationToken?: string;
  /** Every service fails over by distance (its endpoints in zones a, b, c of region r). */
  locality?: boolean;
  /** Every listener requires a JWT (its providers an extension config): what `policyEdit` changes. */
  policy?: boolean;
}

export function serviceYaml(
  i: number,
  endpointSeed = 0,
  features = false,
  registrationToken?: string,
  locality = false,
): string {
  const ip = (k: number) => `10.${(i >> 8) & 255}.${i & 255}.${((k + endpointSeed) % 250) + 1}`;
  return `kind: Service
name: svc-${i}
protocol: http2
connectTimeout: 2s
${locality ? 'locality: { failover: true }\n' : ''}endpoints:
  - { address: ${ip(0)}:8080, region: r, zone: a }
  - { address: ${ip(1)}:8080, region: r, zone: b }
  - { address: ${ip(2)}:8080, region: r, zone: c, weight: 2 }
healthCheck: { type: http, path: /healthz, interval: 5s }
circuitBreaker: { maxConnections: 1000, maxRequests: 1000 }
${features ? 'lb: ring_hash\n' : ''}${registrationToken ? registrationYaml(registrationToken) : ''}`;
}

const registrationYaml = (token: string) => `registration: { tokens: ["${token}"], ttl: 30s }\n`;

export function vhostYaml(v: number, routes: number, services: number, variant = '', features = false): string {
  const lines = [`kind: VirtualHost\nname: vh-${v}\ndomains: [vh-${v}.example.com]`];
  if (features) lines.push(vhostProtection(v));
  lines.push('routes:');
  for (let r = 0; r < routes; r++) {
    const svc = (v * routes + r) % services;
    lines.push(
      features
        ? `  - { name: r-${r}, match: { prefix: /api/r${r}${variant}/ }, to: svc-${svc}, timeout: 3s, retries: { on: ` +
            `[5xx, reset], count: 2, statusCodes: [503], backoff: { base: 25ms } }, ` +
            `hashPolicy: [{ header: x-user }], mirror: [{ to: svc-${(svc + 1) % services}, percent: 5 }], ` +
            `rewrite: { regex: { pattern: '^/api/r${r}/(.*)$', substitution: '/\\1' } }, ` +
            `headers: { request: { set: { x-route: r-${r} } }, response: { remove: [x-debug] } } }`
        : `  - { name: r-${r}, match: { prefix: /api/r${r}${variant}/ }, to: svc-${svc}, timeout: 3s, retries: { on: ` +
            `[5xx, reset], count: 2 } }`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** A virtual host's edge protection, for trees with `features`: every filter has a setting here. */
function vhostProtection(v: number): string {
  return (
    'access: { deny: [10.66.0.0/16, 192.0.2.7] }\n' +
    'rateLimit: { requests: 1000, per: 1s, by: clientAddress }\n' +
    `globalRateLimit: [[{ generic: { key: vhost, value: vh-${v} } }, { clientAddress: true }]]\n` +
    'jwt: { require: [corp], optional: true }\n' +
    `cors: { origins: [{ exact: "https://vh-${v}.example.com" }], methods: [GET, POST], maxAge: 10m }`
  );
}

const JWKS =
  '{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"JBPvOUc1PozJ1I5A1K5WtzjMZNmlKXL1UTUqQL7iTGs",' +
  '"y":"Wjh-OOdnOoQMCm8zXar7XfFxQjHaCfFFRCpSZRosZQI"}]}';

/** A listener's token policy, for trees with `policy`. */
const LISTENER_POLICY =
  `jwt: { providers: [{ name: corp, issuer: https://idp.example, keys: { inline: '${JWKS}' } }], ` +
  'require: [corp] }\n';

/** The listeners file of a tree with `policy`, its keys rotated: only the listeners' extension configs change. */
export function policyEdit(listenersYaml: string): string {
  return listenersYaml.replaceAll('"kid":"k1"', '"kid":"k2"');
}

/** A listener's HTTP features and edge protection, for trees with `features`. */
const LISTENER_FEATURES =
  'accessLog: [{ to: /tmp/fleetxds-bench-access.log }]\n' +
  'http: { useRemoteAddress: true, requestHeadersTimeout: 10s }\n' +
  "headers: { response: { set: { x-served-by: '%HOSTNAME%' } } }\n" +
  'access: { allow: [10.0.0.0/8, 192.168.0.0/16] }\n' +
  `jwt: { providers: [{ name: corp, issuer: https://idp.example, keys: { inline: '${JWKS}' } }] }\n` +
  'extAuth: { service: svc-0, timeout: 200ms }\n' +
  'rateLimit: { requests: 100000, per: 1s }\n' +
  'rateLimitService: { service: svc-1, domain: edge }\n' +
  'compression: { algorithms: [zstd, brotli, gzip], minLength: 1024 }\n' +
  'tracing: { zipkin: { service: svc-2 }, samplePercent: 1, tags: { user: { header: x-user } } }\n';

export function generateTree(dir: string, spec: TreeSpec): { vhosts: number } {
  const perFile = spec.servicesPerFile ?? 100;
  const routesPer = spec.routesPerVhost ?? 100;
  const groups = spec.groups ?? 1;
  mkdirSync(join(dir, 'services'), { recursive: true });
  mkdirSync(join(dir, 'routes'), { recursive: true });
  for (let f = 0; f * perFile < spec.services; f++) {
    const docs: string[] = [];
    for (let i = f * perFile; i < Math.min(spec.services, (f + 1) * perFile); i++)
      docs.push(serviceYaml(i, 0, spec.features, spec.registrationToken, spec.locality));
    writeFileSync(join(dir, 'services', `svc-${f}.yaml`), docs.join('---\n'));
  }
  const vhosts = Math.max(1, Math.ceil(spec.services / routesPer));
  for (let v = 0; v < vhosts; v++)
    writeFileSync(join(dir, 'routes', `vh-${v}.yaml`), vhostYaml(v, routesPer, spec.services, '', spec.features));
  const names = Array.from({ length: vhosts }, (_, v) => `vh-${v}`);
  const ldocs: string[] = [];
  for (let g = 0; g < groups; g++) {
    const group = groups === 1 ? 'default' : `g-${g}`;
    if (groups > 1) ldocs.push(`kind: NodeGroup\nname: ${group}\nmatch: { cluster: ${group} }\n`);
    ldocs.push(
      `kind: Listener\nname: edge-${g}\nport: 10000\ngroups: [${group}]\nvirtualHosts: [${names.join(', ')}]\n` +
        (spec.features ? LISTENER_FEATURES : spec.policy ? LISTENER_POLICY : ''),
    );
  }
  writeFileSync(join(dir, 'listeners.yaml'), ldocs.join('---\n'));
  if (spec.features) writeFileSync(join(dir, 'grpc.yaml'), grpcAppsYaml(spec.services));
  return { vhosts };
}

/**
 * For trees with `features`: a node group of gRPC applications with one gRPC service per 100
 * services (retries with backoff, channel affinity, fault injection, an aggregate for failover) and
 * an xDS-enabled server with access rules for each.
 */
function grpcAppsYaml(services: number): string {
  const docs = ['kind: NodeGroup\nname: grpc-apps\nmatch: { cluster: grpc-apps }\n'];
  for (let k = 0; k < Math.max(1, Math.floor(services / 100)); k++) {
    const a = (k * 100) % services;
    const b = (k * 100 + 1) % services;
    docs.push(
      `kind: Service\nname: agg-${k}\naggregate: [svc-${a}, svc-${b}]\n`,
      `kind: GrpcService\nname: g-${k}\ntarget: g-${k}.internal:50051\ngroups: [grpc-apps]\nroutes:\n` +
        `  - match: { service: pkg.S${k}, method: Get }\n    to: svc-${a}\n` +
        '    retries: { on: [unavailable], count: 2, backoff: { base: 25ms } }\n' +
        '    hashPolicy: [{ channelId: true }]\n' +
        '    fault: { delay: { fixed: 10ms, percent: 0.1 } }\n' +
        `  - to: agg-${k}\n`,
      `kind: GrpcServer\nname: gs-${k}\naddress: 10.200.${k >> 8}.${k & 255}\nport: 50051\ngroups: [grpc-apps]\n` +
        'access:\n  deny: [{ methods: ["pkg.Admin/*"] }]\n' +
        `  allow: [{ addresses: [10.0.0.0/8], methods: ["pkg.S${k}/*"] }]\n`,
    );
  }
  return docs.join('---\n');
}
