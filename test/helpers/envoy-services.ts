/**
 * Servers speaking the gRPC protocols Envoy calls out to, for end-to-end tests: external
 * authorization (envoy.service.auth.v3.Authorization) and rate limiting
 * (envoy.service.ratelimit.v3.RateLimitService), from the protos the project already loads.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const xdsDir = dirname(createRequire(import.meta.url).resolve('@grpc/grpc-js-xds/package.json'));
const includeDirs = ['deps/envoy-api', 'deps/xds', 'deps/googleapis', 'deps/protoc-gen-validate'].map((d) =>
  join(xdsDir, d),
);

function load(file: string): grpc.GrpcObject {
  return grpc.loadPackageDefinition(
    protoLoader.loadSync(file, { keepCase: true, longs: String, enums: String, defaults: false, includeDirs }),
  );
}

function serviceOf(pkg: grpc.GrpcObject, path: string): grpc.ServiceDefinition {
  let o: unknown = pkg;
  for (const seg of path.split('.')) o = (o as Record<string, unknown>)[seg];
  return (o as { service: grpc.ServiceDefinition }).service;
}

export interface GrpcTestServer {
  port: number;
  calls: number;
  close(): Promise<void>;
}

async function serve(definition: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation) {
  const server = new grpc.Server();
  server.addService(definition, impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    port,
    close: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}

/** The request headers Envoy sends in a CheckRequest. */
export type CheckHeaders = Record<string, string>;

/**
 * An authorization server: `decide` gets the request's headers and says allow (with headers to
 * add to the request) or deny (with a status and body).
 */
export async function startAuthorizationServer(
  decide: (headers: CheckHeaders) => { allow: true; add?: Record<string, string> } | { allow: false; status: number },
): Promise<GrpcTestServer> {
  const def = serviceOf(load('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization');
  const out = { calls: 0 } as GrpcTestServer;
  const s = await serve(def, {
    Check: (
      call: grpc.ServerUnaryCall<{ attributes?: { request?: { http?: { headers?: CheckHeaders } } } }, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) => {
      out.calls++;
      const d = decide(call.request.attributes?.request?.http?.headers ?? {});
      if (d.allow)
        cb(null, {
          status: { code: 0 },
          ok_response: {
            headers: Object.entries(d.add ?? {}).map(([key, value]) => ({ header: { key, value } })),
          },
        });
      else
        cb(null, {
          status: { code: 7 }, // PERMISSION_DENIED
          denied_response: { status: { code: d.status }, body: 'denied by policy' },
        });
    },
  });
  return Object.assign(out, s);
}

export interface RateLimitRequest {
  domain: string;
  descriptors: { entries: { key: string; value: string }[] }[];
}

/** A rate-limit service: `decide` says OK or OVER_LIMIT for each request; every request is kept. */
export async function startRateLimitServer(
  decide: (r: RateLimitRequest) => 'OK' | 'OVER_LIMIT',
): Promise<GrpcTestServer & { requests: RateLimitRequest[] }> {
  const def = serviceOf(load('envoy/service/ratelimit/v3/rls.proto'), 'envoy.service.ratelimit.v3.RateLimitService');
  const out = { calls: 0, requests: [] as RateLimitRequest[] } as GrpcTestServer & { requests: RateLimitRequest[] };
  const s = await serve(def, {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<RateLimitRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      out.calls++;
      out.requests.push(call.request);
      const code = decide(call.request);
      cb(null, {
        overall_code: code,
        statuses: call.request.descriptors.map(() => ({
          code,
          current_limit: { requests_per_unit: 2, unit: 'MINUTE' },
          limit_remaining: code === 'OK' ? 1 : 0,
        })),
      });
    },
  });
  return Object.assign(out, s);
}

/** One access log entry as the gRPC access log service receives it (the fields a test reads). */
export interface AccessLogEntry {
  logName: string;
  kind: 'http' | 'tcp';
  request?: { path?: string; request_method?: string };
  response?: { response_code?: number | { value: number } };
  common_properties?: { upstream_cluster?: string; upstream_remote_address?: unknown };
}

/** An access log service (envoy.service.accesslog.v3): every entry of every stream is kept. */
export async function startAccessLogServer(): Promise<GrpcTestServer & { entries: AccessLogEntry[] }> {
  const def = serviceOf(load('envoy/service/accesslog/v3/als.proto'), 'envoy.service.accesslog.v3.AccessLogService');
  const out = { calls: 0, entries: [] as AccessLogEntry[] } as GrpcTestServer & { entries: AccessLogEntry[] };
  type Message = {
    identifier?: { log_name?: string };
    http_logs?: { log_entry: Omit<AccessLogEntry, 'logName' | 'kind'>[] };
    tcp_logs?: { log_entry: Omit<AccessLogEntry, 'logName' | 'kind'>[] };
  };
  const s = await serve(def, {
    StreamAccessLogs: (call: grpc.ServerReadableStream<Message, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      out.calls++;
      let logName = '';
      call.on('data', (m: Message) => {
        logName = m.identifier?.log_name ?? logName;
        for (const e of m.http_logs?.log_entry ?? []) out.entries.push({ ...e, logName, kind: 'http' });
        for (const e of m.tcp_logs?.log_entry ?? []) out.entries.push({ ...e, logName, kind: 'tcp' });
      });
      call.on('end', () => cb(null, {}));
      call.on('error', () => undefined);
    },
  });
  return Object.assign(out, s);
}
