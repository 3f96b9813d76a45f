/**
 * The lean write path (src/transports/grpc/lean-writer.ts) on a real grpc-js server and client:
 * it is available with the grpc-js we ship (an upgrade that removes the internal it needs fails
 * here), messages made of shared parts arrive whole and in order, larger than the HTTP/2
 * flow-control window included, each write reports when it was handed on, and the call still
 * ends with grpc-js's status and trailers.
 */
import * as grpc from '@grpc/grpc-js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { leanWriter } from '../../src/transports/grpc/lean-writer.ts';

const identity = (b: Buffer) => b;
const METHOD = {
  path: '/test.Lean/Stream',
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
};

test('messages of shared parts arrive whole, in order, through flow control; the call ends with OK', async () => {
  const shared = Buffer.alloc(1 << 20, 7); // 1 MiB: many flow-control windows
  const server = new grpc.Server();
  const done: number[] = [];
  let available: boolean | undefined;
  server.addService({ Stream: METHOD } as unknown as grpc.ServiceDefinition, {
    Stream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      const write = leanWriter(call as grpc.ServerDuplexStream<unknown, unknown>);
      available = write !== undefined;
      if (!write) return call.end();
      call.once('data', () => {
        write([Buffer.from('first')], 5, () => done.push(1));
        write([shared, Buffer.from('|tail')], shared.length + 5, () => done.push(2));
        write([Buffer.from('a'), Buffer.from('b'), Buffer.from('c')], 3, () => {
          done.push(3);
          call.end();
        });
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const Client = grpc.makeGenericClientConstructor({ Stream: METHOD } as never, 'Lean');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    Stream: () => grpc.ClientDuplexStream<Buffer, Buffer>;
  };
  const call = client.Stream();
  const got: Buffer[] = [];
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('data', (b: Buffer) => got.push(b));
  call.write(Buffer.from('hello'));
  call.end();
  const s = await status;
  client.close();
  server.forceShutdown();

  assert.ok(available, 'grpc-js exposes the HTTP/2 stream of a server call');
  assert.is(s.code, grpc.status.OK, s.details);
  assert.is(got.length, 3);
  assert.is(got[0]!.toString(), 'first');
  assert.is(got[1]!.length, shared.length + 5);
  assert.ok(got[1]!.subarray(0, shared.length).equals(shared), 'the shared part, byte for byte');
  assert.is(got[1]!.subarray(shared.length).toString(), '|tail');
  assert.is(got[2]!.toString(), 'abc');
  assert.equal(done, [1, 2, 3]);
});

test.run();
