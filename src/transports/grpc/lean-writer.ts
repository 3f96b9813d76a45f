/**
 * Writing xDS responses without copying them per stream.
 *
 * A response is the same encoded resources for every stream (shared bytes) plus a few bytes of
 * its own (nonce, control plane). grpc-js's write path copies each message twice per stream: into
 * one Buffer by whoever concatenates the parts, and again into a new Buffer with the 5-byte gRPC
 * prefix (`serializeMessage`), after passing an object-mode stream. At thousands of streams that
 * was the largest share of a push's CPU besides the kernel's own work (memcpy, allocation of large
 * buffers, and the GC they cause: docs in README "Benchmarks").
 *
 * This writes the prefix and the parts to the call's HTTP/2 stream as one corked batch (a writev:
 * nghttp2 reads the shared buffers in place). Everything else stays grpc-js's: response headers
 * (sent through its own `sendMetadata`), flow control and keepalive (HTTP/2 session), TLS, limits on
 * what clients send, and the status and trailers that end the call. It relies on one internal of
 * grpc-js (the server call keeps its HTTP/2 stream as `call.stream`); when that is not there, the
 * caller falls back to grpc-js's own write, and test/transports/lean-writer.test.ts fails so an
 * upgrade that removes it is noticed.
 */
import type * as grpc from '@grpc/grpc-js';
import type { ServerHttp2Stream } from 'node:http2';

/**
 * Writes one message made of `parts`, `length` bytes in all (the caller counts them anyway, for
 * its unread-bytes bound); `done` once it was handed to the connection.
 */
export type MessageWriter = (parts: readonly Buffer[], length: number, done: () => void) => void;

interface InterceptingCallInternals {
  stream?: ServerHttp2Stream;
  maybeSendMetadata?: () => void;
}

/** The lean writer for a server call, or undefined when grpc-js does not expose what it needs. */
export function leanWriter(call: grpc.ServerDuplexStream<unknown, unknown>): MessageWriter | undefined {
  const inner = (call as unknown as { call?: InterceptingCallInternals }).call;
  const h2 = inner?.stream;
  if (!inner || typeof inner.maybeSendMetadata !== 'function' || !h2 || typeof h2.respond !== 'function')
    return undefined;
  const sendMetadata = inner.maybeSendMetadata.bind(inner);
  return (parts, length, done) => {
    if (h2.destroyed || !h2.writable) return;
    sendMetadata(); // the response headers, once, by grpc-js
    const prefix = Buffer.allocUnsafe(5);
    prefix[0] = 0; // not compressed
    prefix.writeUInt32BE(length, 1);
    h2.cork();
    h2.write(prefix);
    for (let i = 0; i < parts.length - 1; i++) h2.write(parts[i]);
    h2.write(parts[parts.length - 1] ?? Buffer.alloc(0), (err) => {
      if (!err) done(); // a failed write ends the stream; its close handler cleans up
    });
    h2.uncork();
  };
}
