/**
 * A minimal gRPC service for end-to-end tests: /helloworld.Greeter/SayHello with JSON payloads
 * (routing does not look at payloads). Each backend answers with its own name, so a test sees
 * which endpoint the xDS config routed an RPC to.
 */
import * as grpc from '@grpc/grpc-js';

const json = {
  serialize: (v: unknown) => Buffer.from(JSON.stringify(v)),
  deserialize: (b: Buffer) => JSON.parse(b.toString()),
};

/** A unary method of helloworld.Greeter with JSON payloads. */
export function greeterMethod(name: string): grpc.MethodDefinition<unknown, unknown> {
  return {
    path: `/helloworld.Greeter/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  };
}

export const GreeterDefinition: grpc.ServiceDefinition = { SayHello: greeterMethod('SayHello') };

/** Binds a server to a free loopback port, without TLS; its port. */
export function bindLoopback(server: grpc.Server): Promise<number> {
  return new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
}

export interface Backend {
  name: string;
  port: number;
  calls: number;
  close(): Promise<void>;
}

/** `delayMs`: how long each answer takes (a slow backend). */
export async function startBackend(name: string, opts: { delayMs?: number } = {}): Promise<Backend> {
  const server = new grpc.Server();
  const backend: Backend = { name, port: 0, calls: 0, close: () => new Promise((r) => server.tryShutdown(() => r())) };
  server.addService(GreeterDefinition, {
    SayHello: (call: grpc.ServerUnaryCall<{ name: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      backend.calls++;
      const answer = () => cb(null, { message: `hello ${call.request.name}`, backend: name });
      if (opts.delayMs) setTimeout(answer, opts.delayMs);
      else answer();
    },
  });
  backend.port = await bindLoopback(server);
  return backend;
}

const GreeterClient = grpc.makeGenericClientConstructor(GreeterDefinition, 'Greeter');

/** The status an RPC ended with: OK when it succeeded, else the error's code. */
export function statusOf(rpc: Promise<unknown>): Promise<number | undefined> {
  return rpc.then(
    () => grpc.status.OK,
    (e: { code?: number }) => e.code,
  );
}

export interface GreeterClientHandle {
  /** `metadata`: request headers (what a route's header hash policy reads). */
  sayHello(
    name: string,
    deadlineMs?: number,
    metadata?: Record<string, string>,
  ): Promise<{ message: string; backend: string }>;
  close(): void;
}

/** A client on xds:///<target> with its own bootstrap (so one process can be several nodes). */
export function xdsGreeterClient(target: string, bootstrap: object): GreeterClientHandle {
  const client = new GreeterClient(`xds:///${target}`, grpc.credentials.createInsecure(), {
    'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config': JSON.stringify(bootstrap),
  }) as unknown as grpc.Client & { SayHello: (...args: unknown[]) => unknown };
  return {
    sayHello: (name, deadlineMs = 5000, metadata = {}) =>
      new Promise((resolve, reject) => {
        const md = new grpc.Metadata();
        for (const [k, v] of Object.entries(metadata)) md.set(k, v);
        client.SayHello(
          { name },
          md,
          { deadline: Date.now() + deadlineMs },
          (err: Error | null, res: { message: string; backend: string }) => (err ? reject(err) : resolve(res)),
        );
      }),
    close: () => client.close(),
  };
}

export function xdsBootstrap(serverPort: number, nodeId: string, cluster = 'greeter-clients'): object {
  return {
    xds_servers: [
      { server_uri: `127.0.0.1:${serverPort}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
    ],
    node: { id: nodeId, cluster, locality: {} },
  };
}
