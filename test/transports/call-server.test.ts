/**
 * The gRPC server of the xDS methods (src/transports/grpc/call-server.ts) on real sockets, against
 * grpc-js's client (an implementation nobody here wrote) and, for what a library would not send,
 * raw HTTP/2: what grpc-js's server did, it does. Messages of shared parts arrive whole and in
 * order through flow control; statuses come in trailers or alone, percent-encoded; the protocol's
 * errors (content type, unknown method, receive limit, compression, deadline) get their statuses;
 * keepalive drops a peer that does not answer pings; a shutdown ends open calls with its status.
 */
import * as grpc from '@grpc/grpc-js';
import http2 from 'node:http2';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  createCallServer,
  type CallListener,
  type CallServerOptions,
  type MethodHandler,
  type GrpcCall,
} from '../../src/transports/grpc/call-server.ts';
import { Status, type StatusCode } from '../../src/transports/grpc/status.ts';
import { waitFor } from '../helpers/process.ts';

const identity = (b: Buffer) => b;
const method = (path: string) => ({
  path,
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});
const ECHO = '/test.Echo/Stream';

/** Echoes each request; "status:N:details" ends the call with that status; half-close ends it OK. */
const echo: MethodHandler = (call) => ({
  message(payload) {
    const text = payload.toString();
    const m = /^status:(\d+):(.*)$/s.exec(text);
    if (m) return call.end(Number(m[1]) as StatusCode, m[2]);
    call.write([Buffer.from('echo:'), payload], payload.length + 5, () => {});
  },
  halfClose: () => call.end(Status.OK),
  closed: () => {},
});

async function serve(methods: [string, MethodHandler][], o: Partial<CallServerOptions> = {}) {
  const server = createCallServer({
    methods: new Map(methods),
    maxReceiveBytes: 1024,
    keepaliveTimeMs: 60_000,
    keepaliveTimeoutMs: 20_000,
    maxConcurrentStreams: 100,
    ...o,
  });
  const port = await server.listen('127.0.0.1', 0);
  return { server, port, close: () => server.close(Status.UNAVAILABLE, 'test over', 10) };
}

type DuplexClient = grpc.Client & {
  Stream: (md?: grpc.Metadata, o?: grpc.CallOptions) => grpc.ClientDuplexStream<Buffer, Buffer>;
};
function grpcClient(port: number, path = ECHO): DuplexClient {
  const Client = grpc.makeGenericClientConstructor({ Stream: method(path) }, 'Test');
  return new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as DuplexClient;
}

/** Runs `body` against a server of the echo method and a grpc-js client of it; closes both after. */
async function withEcho(body: (c: { client: DuplexClient; port: number }) => Promise<void>): Promise<void> {
  const s = await serve([[ECHO, echo]]);
  const client = grpcClient(s.port);
  try {
    await body({ client, port: s.port });
  } finally {
    client.close();
    await s.close();
  }
}

/** Runs one call: writes `requests`, half-closes unless told not to; resolves its messages and status. */
async function exchange(client: DuplexClient, requests: Buffer[], o: { halfClose?: boolean; deadline?: number } = {}) {
  const call = client.Stream(new grpc.Metadata(), o.deadline ? { deadline: Date.now() + o.deadline } : {});
  const got: Buffer[] = [];
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('data', (b: Buffer) => got.push(b));
  call.on('error', () => {});
  for (const r of requests) call.write(r);
  if (o.halfClose !== false) call.end();
  return { got, status: await status };
}

/** A raw HTTP/2 call: returns the response headers, body and trailers once the stream closes. */
function rawCall(port: number, headers: http2.OutgoingHttpHeaders, body: Buffer) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const req = session.request({ ':method': 'POST', te: 'trailers', ...headers });
  req.on('error', () => {});
  const out = {
    headers: {} as http2.IncomingHttpHeaders,
    trailers: {} as http2.IncomingHttpHeaders,
    body: [] as Buffer[],
  };
  req.on('response', (h) => (out.headers = h));
  req.on('trailers', (t) => (out.trailers = t));
  req.on('data', (b: Buffer) => out.body.push(b));
  req.end(body);
  return new Promise<typeof out>((resolve) =>
    req.on('close', () => {
      session.close();
      resolve(out);
    }),
  );
}

const framed = (payload: Buffer, compressed = false) => {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
};

test('messages of shared parts arrive whole and in order, through flow control; each write reports', async () => {
  const shared = Buffer.alloc(1 << 20, 7); // 1 MiB: many flow-control windows
  const done: number[] = [];
  // A stream's own fields first, then the shared body (a SotW response): the head goes with the prefix.
  const head = Buffer.from('nonce 42|');
  const wrote: boolean[] = [];
  const pending: number[] = [];
  const s = await serve([
    [
      ECHO,
      (call) => ({
        message() {
          call.write([Buffer.from('first')], 5, () => done.push(1));
          call.write([shared, Buffer.from('|tail')], shared.length + 5, () => done.push(2));
          call.write([Buffer.from('a'), Buffer.from('b'), Buffer.from('c')], 3, () => done.push(3));
          wrote.push(call.write([head, shared], head.length + shared.length, () => done.push(4)));
          pending.push(call.pendingBytes);
          const big = Buffer.alloc(300, 'h'); // too big to go with the prefix: written on its own
          call.write([big, Buffer.from('|body')], big.length + 5, () => {
            done.push(5);
            pending.push(call.pendingBytes);
            call.end(Status.OK);
            wrote.push(call.write([Buffer.from('late')], 4, () => done.push(6)));
          });
        },
        halfClose: () => {},
        closed: () => {},
      }),
    ],
  ]);
  const client = grpcClient(s.port);
  try {
    const { got, status } = await exchange(client, [Buffer.from('go')], { halfClose: false });
    assert.is(status.code, grpc.status.OK, status.details);
    assert.is(got.length, 5);
    assert.is(got[0]!.toString(), 'first');
    assert.ok(got[1]!.subarray(0, shared.length).equals(shared), 'the shared part, byte for byte');
    assert.is(got[1]!.subarray(shared.length).toString(), '|tail');
    assert.is(got[2]!.toString(), 'abc');
    assert.ok(got[3]!.equals(Buffer.concat([head, shared])), 'a small head, then the shared body');
    assert.is(got[4]!.toString(), `${'h'.repeat(300)}|body`);
    assert.equal(done, [1, 2, 3, 4, 5], 'a write after the status neither sends nor reports');
    assert.equal(wrote, [true, false], 'write says whether it wrote');
    const total = 5 + shared.length + 5 + 3 + head.length + shared.length;
    assert.equal(pending, [total, 0], 'pendingBytes: what is written and not handed over, back to 0 once all are');
  } finally {
    client.close();
    await s.close();
  }
});

test('requests reach the method in order; the client half-closing ends the call OK', () =>
  withEcho(async ({ client }) => {
    const { got, status } = await exchange(
      client,
      ['one', 'two', 'three'].map((x) => Buffer.from(x)),
    );
    assert.is(status.code, grpc.status.OK);
    assert.equal(
      got.map((b) => b.toString()),
      ['echo:one', 'echo:two', 'echo:three'],
    );
  }));

test('a status after messages comes in trailers, one before any alone; details survive percent-encoding', () =>
  withEcho(async ({ client, port }) => {
    const details = 'bad node "édge-1": 100% wrong\tand more';
    const after = await exchange(client, [Buffer.from('hi'), Buffer.from(`status:9:${details}`)], { halfClose: false });
    assert.equal(
      after.got.map((b) => b.toString()),
      ['echo:hi'],
    );
    assert.is(after.status.code, grpc.status.FAILED_PRECONDITION);
    assert.is(after.status.details, details);

    const alone = await rawCall(
      port,
      { ':path': ECHO, 'content-type': 'application/grpc' },
      framed(Buffer.from('status:7:no')),
    );
    assert.is(alone.headers['grpc-status'], '7', 'trailers-only: the status is in the response headers');
    assert.is(alone.headers['content-type'], 'application/grpc+proto');
    assert.is(alone.body.length, 0);
  }));

test('protocol errors: content type (415), unknown method (UNIMPLEMENTED), message over the limit', async () => {
  const s = await serve([[ECHO, echo]]);
  const client = grpcClient(s.port, '/test.Echo/Nope');
  const echoClient = grpcClient(s.port);
  try {
    const json = await rawCall(s.port, { ':path': ECHO, 'content-type': 'application/json' }, Buffer.from('{}'));
    assert.is(json.headers[':status'], 415);

    const unknown = await exchange(client, [Buffer.from('x')]);
    assert.is(unknown.status.code, grpc.status.UNIMPLEMENTED);
    assert.match(unknown.status.details, '/test.Echo/Nope');

    const big = await exchange(echoClient, [Buffer.from('ok'), Buffer.alloc(1025, 1)], { halfClose: false });
    assert.is(big.status.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(big.status.details, 'larger than max (1025 vs. 1024)');
    const limit = await exchange(echoClient, [Buffer.alloc(1024, 1)]);
    assert.is(limit.status.code, grpc.status.OK, 'a message of exactly the limit passes');
    assert.is(limit.got[0]!.length, 1029);
  } finally {
    client.close();
    echoClient.close();
    await s.close();
  }
});

test('compressed requests: gzip and deflate are inflated; past the limit, unknown or undeclared, refused', async () => {
  const s = await serve([[ECHO, echo]]);
  const call = (encoding: string | undefined, body: Buffer) =>
    rawCall(
      s.port,
      { ':path': ECHO, 'content-type': 'application/grpc', ...(encoding ? { 'grpc-encoding': encoding } : {}) },
      body,
    );
  const text = (r: Awaited<ReturnType<typeof call>>) => Buffer.concat(r.body).subarray(5).toString();
  const status = (r: Awaited<ReturnType<typeof call>>) => r.trailers['grpc-status'] ?? r.headers['grpc-status'];
  try {
    const gz = await call('gzip', framed(gzipSync('zipped'), true));
    assert.is(text(gz), 'echo:zipped');
    assert.is(status(gz), '0');
    const { deflateSync } = await import('node:zlib');
    assert.is(text(await call('deflate', framed(deflateSync('deflated'), true))), 'echo:deflated');
    assert.is(text(await call('gzip', framed(Buffer.from('plain')))), 'echo:plain', 'flag 0 is not inflated');

    const bomb = await call('gzip', framed(gzipSync(Buffer.alloc(4096)), true));
    assert.is(status(bomb), String(Status.RESOURCE_EXHAUSTED));
    assert.match(decodeURI(String(bomb.headers['grpc-message'])), 'decompresses to a size larger than 1024');
    const atLimit = await call('gzip', framed(gzipSync(Buffer.alloc(1024, 1)), true));
    assert.is(Buffer.concat(atLimit.body).length, 5 + 5 + 1024, 'inflating to exactly the limit passes');
    assert.is(
      status(await call('gzip', framed(gzipSync(Buffer.alloc(1025, 1)), true))),
      String(Status.RESOURCE_EXHAUSTED),
    );
    assert.is(status(await call('br', framed(Buffer.from('x'), true))), String(Status.UNIMPLEMENTED));
    assert.is(status(await call(undefined, framed(Buffer.from('x'), true))), String(Status.INTERNAL));
    assert.is(status(await call('gzip', framed(Buffer.from('not gzip'), true))), String(Status.INTERNAL));
  } finally {
    await s.close();
  }
});

test('grpc-timeout: a call past its deadline ends DEADLINE_EXCEEDED; a malformed one INTERNAL', () =>
  withEcho(async ({ client, port }) => {
    const started = Date.now();
    const late = await exchange(client, [Buffer.from('hi')], { halfClose: false, deadline: 200 });
    assert.is(late.status.code, grpc.status.DEADLINE_EXCEEDED);
    assert.ok(Date.now() - started >= 150, 'not before its deadline');
    const bad = await rawCall(
      port,
      { ':path': ECHO, 'content-type': 'application/grpc', 'grpc-timeout': '5 fortnights' },
      Buffer.alloc(0),
    );
    assert.is(bad.headers['grpc-status'] ?? bad.trailers['grpc-status'], String(Status.INTERNAL));
  }));

test('a grpc-timeout past what a timer holds (600H) is no deadline, not an instant one', () =>
  withEcho(async ({ port }) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    const req = session.request({
      ':method': 'POST',
      ':path': ECHO,
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': '600H',
    });
    req.on('error', () => {});
    let status: string | undefined;
    const got: Buffer[] = [];
    req.on('trailers', (t) => (status = String(t['grpc-status'])));
    req.on('response', (h) => (status ??= h['grpc-status'] as string | undefined));
    req.on('data', (b: Buffer) => got.push(b));
    req.write(framed(Buffer.from('still here')));
    await new Promise((r) => setTimeout(r, 300));
    assert.is(status, undefined, 'the call is still open');
    assert.is(Buffer.concat(got).subarray(5).toString(), 'echo:still here');
    req.close();
    session.close();
  }));

/** Opens `n` calls on one connection, each sending the first `bytes` of a message it never finishes. */
async function partialCalls(port: number, n: number, bytes: number) {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const statuses: Promise<string | undefined>[] = [];
  for (let i = 0; i < n; i++) {
    const req = session.request({
      ':method': 'POST',
      ':path': ECHO,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    req.on('error', () => {});
    const head = Buffer.alloc(5);
    head.writeUInt32BE(1000, 1);
    req.write(Buffer.concat([head, Buffer.alloc(bytes)]));
    statuses.push(
      new Promise((resolve) => {
        let status: string | undefined;
        req.on('response', (h) => (status ??= h['grpc-status'] as string | undefined));
        req.on('trailers', (t) => (status = t['grpc-status'] as string));
        // The server resets the stream once its status is out: the client stops sending.
        req.on('close', () => resolve(status));
      }),
    );
  }
  return { session, statuses };
}

test('unfinished messages: bounded per connection and per server, and timed', async () => {
  const s = await serve([[ECHO, echo]], {
    maxHeldBytesPerConnection: 2000,
    maxHeldBytes: 3000,
    messageTimeoutMs: 500,
  });
  try {
    // Four calls of 900 bytes each on one connection: the third passes the connection's 2,000.
    const one = await partialCalls(s.port, 4, 900);
    const first = await Promise.race([
      Promise.all(one.statuses.slice(2)),
      new Promise((r) => setTimeout(() => r('timeout'), 400)),
    ]);
    assert.equal(first, [String(Status.RESOURCE_EXHAUSTED), String(Status.RESOURCE_EXHAUSTED)]);
    // A second connection may hold 1,000 more bytes, then the server's 3,000 is reached.
    const two = await partialCalls(s.port, 2, 900);
    assert.is(await two.statuses[1], String(Status.RESOURCE_EXHAUSTED));
    // The calls that fit are ended when their messages do not complete in time.
    assert.equal(await Promise.all([...one.statuses.slice(0, 2), two.statuses[0]]), [
      String(Status.RESOURCE_EXHAUSTED),
      String(Status.RESOURCE_EXHAUSTED),
      String(Status.RESOURCE_EXHAUSTED),
    ]);
    one.session.close();
    two.session.close();
    // Everything is given back: a new call on a new connection is served.
    await withEchoOn(s.port);
  } finally {
    await s.close();
  }
});

async function withEchoOn(port: number) {
  const client = grpcClient(port);
  try {
    const r = await exchange(client, [Buffer.from('after')]);
    assert.is(r.status.code, grpc.status.OK);
    assert.is(Buffer.concat(r.got).toString(), 'echo:after');
  } finally {
    client.close();
  }
}

test('a compressed request is inflated off the main thread, in order, and to what an xDS request needs', async () => {
  const s = await serve([[ECHO, echo]], { maxReceiveBytes: 64 * 1024 * 1024 });
  try {
    const session = http2.connect(`http://127.0.0.1:${s.port}`);
    session.on('error', () => {});
    const req = session.request({
      ':method': 'POST',
      ':path': ECHO,
      'content-type': 'application/grpc',
      'grpc-encoding': 'gzip',
      te: 'trailers',
    });
    req.on('error', () => {});
    const got: Buffer[] = [];
    req.on('data', (b: Buffer) => got.push(b));
    // Compressed, plain, compressed: answered in the order sent.
    req.write(framed(gzipSync('one'), true));
    req.write(framed(Buffer.from('two')));
    req.write(framed(gzipSync('three'), true));
    // 16 MiB of zeros in a few KB: refused past 4 MiB although 64 MiB messages are accepted.
    const bomb = gzipSync(Buffer.alloc(16 * 1024 * 1024));
    assert.ok(bomb.length < 32 * 1024);
    // The event loop keeps turning while it is inflated.
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 1);
    req.end(framed(bomb, true));
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('trailers', resolve));
    clearInterval(ticking);
    const body = Buffer.concat(got);
    const messages: string[] = [];
    for (let at = 0; at < body.length; at += 5 + body.readUInt32BE(at + 1))
      messages.push(body.subarray(at + 5, at + 5 + body.readUInt32BE(at + 1)).toString());
    assert.equal(messages, ['echo:one', 'echo:two', 'echo:three']);
    assert.is(trailers['grpc-status'], String(Status.RESOURCE_EXHAUSTED));
    assert.match(decodeURI(String(trailers['grpc-message'])), 'decompresses to a size larger than 4194304');
    assert.ok(ticks > 0);
    session.close();
  } finally {
    await s.close();
  }
});

/** HTTP/2 frames read off a raw socket: [type, flags] of each. */
function rawHttp2(port: number): { socket: Socket; frames: [number, number][]; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  const frames: [number, number][] = [];
  let buf = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9 && buf.length >= 9 + buf.readUIntBE(0, 3)) {
      frames.push([buf[3]!, buf[4]!]);
      buf = buf.subarray(9 + buf.readUIntBE(0, 3));
    }
  });
  socket.on('error', () => {});
  // The client preface and an empty SETTINGS frame; then nothing, not even a ping's answer.
  socket.write(
    Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]),
  );
  return { socket, frames, closed: new Promise((r) => socket.on('close', () => r())) };
}

test('keepalive: pings every connection; drops one that does not answer, keeps one that does', async () => {
  const s = await serve([[ECHO, echo]], { keepaliveTimeMs: 100, keepaliveTimeoutMs: 200 });
  const PING = 6;
  const silent = rawHttp2(s.port);
  const answering = http2.connect(`http://127.0.0.1:${s.port}`);
  answering.on('error', () => {});
  let pings = 0;
  answering.on('ping', () => pings++);
  try {
    await Promise.race([silent.closed, new Promise((_, no) => setTimeout(() => no(new Error('not dropped')), 3000))]);
    assert.ok(
      silent.frames.some(([type, flags]) => type === PING && flags === 0),
      'the server pinged the silent peer before dropping it',
    );
    await waitFor('the answering client pinged twice', () => pings >= 2, 3000);
    assert.not.ok(answering.closed || answering.destroyed, 'a peer that answers stays connected');
  } finally {
    answering.destroy();
    silent.socket.destroy();
    await s.close();
  }
});

test('hostile input: HTTP/1.1, garbage after the preface, a call reset with an error lose only themselves', () =>
  withEcho(async ({ client, port }) => {
    const dropped = (bytes: Buffer) =>
      new Promise<void>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
        socket.on('data', () => {});
        socket.on('error', () => {});
        socket.on('close', () => resolve());
        setTimeout(() => reject(new Error('connection kept open')), 3000);
      });
    await dropped(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    await dropped(Buffer.concat([preface, Buffer.alloc(64, 0xff)]));
    // A call the client resets with an error code (not CANCEL): Node reports it as the stream's error.
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    const req = session.request({ ':method': 'POST', ':path': ECHO, 'content-type': 'application/grpc' });
    req.on('error', () => {});
    req.write(framed(Buffer.from('then reset')));
    await new Promise((r) => req.once('data', r));
    req.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    await new Promise((r) => setTimeout(r, 100));
    session.close();
    const { got, status } = await exchange(client, [Buffer.from('still here')]);
    assert.is(status.code, grpc.status.OK);
    assert.is(got[0]!.toString(), 'echo:still here');
  }));

test('listening on localhost takes its IPv4 address, and its IPv6 one where the machine has it', async () => {
  const server = createCallServer({
    methods: new Map([[ECHO, echo]]),
    maxReceiveBytes: 1024,
    keepaliveTimeMs: 60_000,
    keepaliveTimeoutMs: 20_000,
    maxConcurrentStreams: 100,
  });
  const port = await server.listen('localhost', 0);
  const call = async (host: string) => {
    const Client = grpc.makeGenericClientConstructor({ Stream: method(ECHO) }, 'Test');
    const c = new Client(`${host}:${port}`, grpc.credentials.createInsecure()) as unknown as DuplexClient;
    try {
      return (await exchange(c, [Buffer.from('x')])).status.code;
    } finally {
      c.close();
    }
  };
  try {
    assert.is(await call('127.0.0.1'), grpc.status.OK);
    // Whether this machine has IPv6 loopback at all, asked of the system, not of the server under test.
    const ipv6 = await new Promise<boolean>((resolve) => {
      const probe = createNetServer();
      probe.once('error', () => resolve(false));
      probe.listen(0, '::1', () => probe.close(() => resolve(true)));
    });
    if (ipv6) assert.is(await call('[::1]'), grpc.status.OK);
  } finally {
    await server.close(Status.UNAVAILABLE, 'test over', 10);
  }
});

test('shutdown: open calls end with its status and details; each call is closed once', async () => {
  let closedCalls = 0;
  const calls: GrpcCall[] = [];
  const counting: MethodHandler = (call) => {
    calls.push(call);
    const l = echo(call) as CallListener;
    return { ...l, closed: () => closedCalls++ };
  };
  const s = await serve([[ECHO, counting]]);
  const client = grpcClient(s.port);
  try {
    const pending = [1, 2, 3].map(() => exchange(client, [Buffer.from('hold')], { halfClose: false }));
    await waitFor('three calls open', () => s.server.calls.size === 3, 3000);
    await s.server.close(Status.UNAVAILABLE, 'fleetxds is stopping', 50);
    for (const { status } of await Promise.all(pending)) {
      assert.is(status.code, grpc.status.UNAVAILABLE);
      assert.is(status.details, 'fleetxds is stopping');
    }
    await waitFor('every call closed', () => closedCalls === 3, 3000);
    assert.is(s.server.calls.size, 0);
    calls[0]!.end(Status.INTERNAL, 'again'); // ending an ended call does nothing
    await new Promise((r) => setTimeout(r, 50));
    assert.is(closedCalls, 3);
  } finally {
    client.close();
  }
});

test.run();
