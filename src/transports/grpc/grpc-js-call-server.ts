/**
 * The xDS methods served by @grpc/grpc-js's server (`grpc.implementation: grpc-js`), behind the
 * same CallServer interface as the node:http2 one, so the two can be measured side by side on the
 * same streams (`npm run bench -- grpc-server`). grpc-js is used at its best for pre-encoded
 * responses: the serializer passes the shared response bytes through (a response of several parts
 * is joined once; grpc-js copies it again into its frame), and requests reach the handler as the
 * bytes they came in.
 *
 * What it lacks beside the node:http2 server, so the settings allow it only without TLS and in one
 * thread: certificates replaced on a running server, SO_REUSEPORT for serving threads; and the
 * per-connection and server-wide budget of bytes held for unfinished requests, and the time limit
 * on a message that arrives in pieces.
 */
import { Server, ServerCredentials, type ServerDuplexStream, type ServerErrorResponse } from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';
import {
  DEFAULT_MAX_CONNECTION_AGE_GRACE_MS,
  type CallListener,
  type CallServer,
  type CallServerOptions,
  type GrpcCall,
} from './call-server.ts';
import { Status, type StatusCode } from './status.ts';

/** A response as the serializer gets it: its parts, joined only when there are several. */
interface Parts {
  readonly parts: readonly Buffer[];
  readonly length: number;
}

const serialize = (m: Parts): Buffer => (m.parts.length === 1 ? m.parts[0]! : Buffer.concat(m.parts, m.length));
const deserialize = (b: Buffer): Buffer => b;

class GrpcJsCall implements GrpcCall {
  readonly authority: string;
  readonly peer: string;
  private pending = 0;
  private ended = false;

  constructor(private readonly stream: ServerDuplexStream<Buffer, Parts>) {
    this.authority = stream.getHost();
    this.peer = stream.getPeer();
  }

  /** Served without TLS (the settings refuse grpc.tls with this implementation). */
  peerCertificate(): PeerCertificate | undefined {
    return undefined;
  }

  get pendingBytes(): number {
    return this.pending;
  }

  get writable(): boolean {
    return !this.ended && !this.stream.cancelled && !this.stream.destroyed && this.stream.writable;
  }

  write(parts: readonly Buffer[], length: number, done: () => void): boolean {
    if (!this.writable) return false;
    this.pending += length;
    this.stream.write({ parts, length }, (err?: Error | null) => {
      this.pending -= length;
      if (!err) done();
    });
    return true;
  }

  end(code: StatusCode, details = ''): void {
    if (this.ended) return;
    this.ended = true;
    if (this.stream.cancelled || this.stream.destroyed) return;
    if (code === Status.OK) this.stream.end();
    else this.stream.emit('error', { code, details } as Partial<ServerErrorResponse>);
  }

  /** Delivers the stream's events to the method's listener; `ended` runs before its closed(). */
  start(listener: CallListener, ended: () => void): void {
    const s = this.stream;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.ended = true;
      ended();
      listener.closed();
    };
    s.on('data', (bytes: Buffer) => listener.message(bytes));
    s.on('end', () => {
      if (!this.ended) listener.halfClose();
    });
    s.on('error', () => {}); // the status it carries is sent; close ends the call
    s.once('cancelled', close);
    s.once('close', close);
    s.once('finish', close);
  }
}

export function createGrpcJsCallServer(o: CallServerOptions): CallServer {
  if (o.tls) throw new Error('grpc.implementation grpc-js serves without TLS');
  const server = new Server({
    'grpc.max_receive_message_length': o.maxReceiveBytes,
    'grpc.max_send_message_length': -1,
    'grpc.keepalive_time_ms': o.keepaliveTimeMs,
    'grpc.keepalive_timeout_ms': o.keepaliveTimeoutMs,
    'grpc.max_concurrent_streams': o.maxConcurrentStreams,
    ...(o.maxConnectionAgeMs !== undefined && {
      'grpc.max_connection_age_ms': o.maxConnectionAgeMs,
      'grpc.max_connection_age_grace_ms': o.maxConnectionAgeGraceMs ?? DEFAULT_MAX_CONNECTION_AGE_GRACE_MS,
    }),
  });
  const calls = new Set<GrpcJsCall>();
  for (const [path, handler] of o.methods)
    server.register<Buffer, Parts>(
      path,
      (stream: ServerDuplexStream<Buffer, Parts>) => {
        const call = new GrpcJsCall(stream);
        const listener = handler(call);
        if (!listener) return;
        calls.add(call);
        call.start(listener, () => calls.delete(call));
      },
      serialize,
      deserialize,
      'bidi',
    );
  return {
    calls,
    listen: (host, port, opts = {}) => {
      if (opts.reusePort) throw new Error('grpc.implementation grpc-js serves in one thread (no SO_REUSEPORT)');
      return new Promise((resolve, reject) =>
        server.bindAsync(
          `${host.includes(':') ? `[${host}]` : host}:${port}`,
          ServerCredentials.createInsecure(),
          (err, bound) => (err ? reject(err) : resolve(bound)),
        ),
      );
    },
    async close(code, details, flushMs) {
      for (const call of [...calls]) call.end(code, details);
      await new Promise((r) => setTimeout(r, flushMs));
      server.forceShutdown();
    },
    setTls() {
      throw new Error('grpc.implementation grpc-js cannot replace the certificate of a running server');
    },
  };
}
