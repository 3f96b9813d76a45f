/**
 * gRPC's server side over node:http2, for the streaming xDS methods: connections (keepalive
 * pings, a maximum age ended by GOAWAY), calls (length-prefixed messages in, responses and a
 * status out) and the protocol's errors, as the gRPC HTTP/2 spec (grpc/doc/PROTOCOL-HTTP2.md)
 * and grpc-js's server give them.
 *
 * Why not @grpc/grpc-js's server, which fleetxds used until it was measured (README, "Side by
 * side"): per message it passes object-mode Node streams, an interceptor chain and a queue that
 * pauses the HTTP/2 stream for every request, and per call it builds Metadata, channelz records
 * and closures; at 5,000 streams that was a third of a reconnect storm's CPU beside the floor of
 * bare node:http2. Responses here are the caller's shared bytes written in one corked batch, and
 * a request is a view of the frame it came in.
 *
 * What grpc-js did and this keeps, tested in test/transports/call-server.test.ts: content-type
 * check (415), UNIMPLEMENTED for unknown methods, trailers-only responses for a status before any
 * message, grpc-message percent-encoded, the receive limit (RESOURCE_EXHAUSTED), gzip and deflate
 * requests, grpc-timeout (DEADLINE_EXCEEDED), keepalive pings and their timeout, HTTP/2 flow
 * control (Node's). Tested through the xDS server: the maximum connection age with ±10% jitter and
 * a grace period (test/transports/replica-limits.test.ts), TLS with client certificates
 * (test/security/security.test.ts), and a call released however its stream ends
 * (test/transports/stream-release.test.ts).
 */
import http2, {
  type Http2SecureServer,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { PeerCertificate } from 'node:tls';
import { verifiedPeerCertificate } from '../../security/node-identity.ts';
import { listenerOptions, type ListenerTls } from '../../security/listener-tls.ts';
import { gunzip, inflate } from 'node:zlib';
import { MessageReader, MessageTooLarge, type FramedMessage } from './message-reader.ts';
import { ReceiveBudget, TaskGate } from './receive-budget.ts';
import { Status, type StatusCode } from './status.ts';

/** What a method's handler hears of its call. */
export interface CallListener {
  /** One request message, decompressed: a view of the frame when it came in one. */
  message(payload: Buffer): void;
  /** The client half-closed its side: it sends no more. */
  halfClose(): void;
  /** The call is over, however it ended (status sent, cancelled, connection lost). Called once. */
  closed(): void;
}

/** One call as a method's handler sees it, whichever server carries it. */
export interface GrpcCall {
  /** The `:authority` the client sent (Envoy: the name of its xDS cluster). */
  readonly authority: string;
  /** `address:port` of the client. */
  readonly peer: string;
  /** The client certificate of a TLS connection that was verified against the CA, else undefined. */
  peerCertificate(): PeerCertificate | undefined;
  /** Bytes of messages written and not yet handed to the connection. */
  readonly pendingBytes: number;
  /** Whether a message written now can still reach the client. */
  readonly writable: boolean;
  /**
   * Writes one response message made of `parts` (`length` bytes in all); `done` once it was handed to
   * the connection. Returns whether it was written (false: the call can no longer write).
   */
  write(parts: readonly Buffer[], length: number, done: () => void): boolean;
  /** Ends the call with a status (after the messages written, or alone). Later calls do nothing. */
  end(code: StatusCode, details?: string): void;
}

/** A method: given a new call, returns what listens to it (or ends the call and returns nothing). */
export type MethodHandler = (call: GrpcCall) => CallListener | undefined;

export interface CallServerOptions {
  /** Path (`/package.Service/Method`) -> handler. */
  methods: ReadonlyMap<string, MethodHandler>;
  /** Largest request message accepted (compressed as sent). */
  maxReceiveBytes: number;
  /** Largest request a compressed message may inflate to (default: maxReceiveBytes, at most 4 MiB). */
  maxInflatedBytes?: number;
  /**
   * Bytes of unfinished or not yet inflated requests held for one connection, and for the server
   * (default: twice and eight times maxReceiveBytes); past them the call is ended with RESOURCE_EXHAUSTED.
   */
  maxHeldBytesPerConnection?: number;
  maxHeldBytes?: number;
  /** Time a started message has to arrive whole before its call is ended (default 30 s). */
  messageTimeoutMs?: number;
  /** Ping every connection this often, and drop it when a ping is not answered within the timeout. */
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  /** Connections older than this (±10%) get a GOAWAY; what is still open is ended after the grace. */
  maxConnectionAgeMs?: number;
  /** After the GOAWAY, how long open streams may stay (default: DEFAULT_MAX_CONNECTION_AGE_GRACE_MS). */
  maxConnectionAgeGraceMs?: number;
  /** Streams a client may open on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** TLS; with `ca`, client certificates are required and checked against it. */
  tls?: ListenerTls;
}

/** How long streams may stay after a connection past its maximum age was asked to go away. */
export const DEFAULT_MAX_CONNECTION_AGE_GRACE_MS = 10_000;

/** The headers of every response (a fresh object each time: Node takes the object it is given). */
const responseHeaders = () => ({
  ':status': 200,
  'content-type': 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
});
const DEADLINE = /^(\d{1,8})\s*([HMSmun])$/;
/** Node's timers hold at most this: a longer grpc-timeout (100000000H is valid) is no deadline at all. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** What an xDS request may inflate to: a DiscoveryRequest naming 10,000 resources is well below it. */
const MAX_INFLATED_BYTES = 4 * 1024 * 1024;
/** Requests inflated at once, on libuv's thread pool (shared with file reads). */
const INFLATING = 2;

/** What every call of one server shares: bounds on the bytes it holds for clients. */
interface ReceiveLimits {
  maxReceiveBytes: number;
  maxInflatedBytes: number;
  messageTimeoutMs: number;
  budget: ReceiveBudget;
  inflating: TaskGate;
}
const DEADLINE_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000_001 };
/** Sent with the GOAWAY of a connection past its maximum age, as grpc-js does. */
const MAX_AGE_DEBUG = Buffer.from('max_age');
const noop = () => {};
/** A first part up to this size is copied next to the message's prefix rather than written on its own. */
const SMALL_HEAD = 256;
/**
 * A message up to this size is copied whole into the prefix's buffer: one write to the stream costs
 * more than copying a few KB, so a small push (an endpoint change) is one write per stream.
 */
const SMALL_MESSAGE = 4096;

/** One gRPC call on its HTTP/2 stream. */
export class ServerCall implements GrpcCall {
  private headersSent = false;
  private statusSent = false;
  private listener: CallListener | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private readonly reader: MessageReader;
  private readonly encoding: string;
  /**
   * Each message written and not yet handed to the connection, oldest first (a stream calls back its
   * writes in order): its `done` and its length. One callback per call instead of a closure per message.
   */
  private readonly writing: (() => void)[] = [];
  private readonly writingLengths: number[] = [];
  private pending = 0;
  private readonly written = (err?: Error | null): void => {
    this.pending -= this.writingLengths.shift()!;
    const done = this.writing.shift();
    if (!err) done?.(); // a failed write ends the stream; its close ends the call
  };
  /** The `:authority` the client sent (Envoy: the name of its xDS cluster). */
  readonly authority: string;
  /** Complete messages waiting for one before them to be inflated, in order. */
  private readonly backlog: FramedMessage[] = [];
  private inflatingOne = false;
  private halfClosed = false;
  /** Bytes taken from the budget for this call: what the reader and the backlog hold. */
  private held = 0;
  private messageTimer: NodeJS.Timeout | undefined;
  /** The connection the budget counts this call against. */
  private readonly connection: object;

  constructor(
    private readonly stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    private readonly limits: ReceiveLimits,
  ) {
    this.reader = new MessageReader(limits.maxReceiveBytes);
    this.connection = stream.session ?? stream;
    const encoding = headers['grpc-encoding'];
    this.encoding = typeof encoding === 'string' ? encoding : 'identity';
    this.authority = headers[':authority'] ?? headers.host ?? '';
  }

  /** `address:port` of the client, as grpc-js's getPeer() gave it. */
  get peer(): string {
    const s = this.stream.session?.socket;
    if (!s?.remoteAddress) return 'unknown';
    return s.remotePort ? `${s.remoteAddress}:${s.remotePort}` : s.remoteAddress;
  }

  /** The client certificate of a TLS connection that was verified against the CA, else undefined. */
  peerCertificate(): PeerCertificate | undefined {
    return verifiedPeerCertificate(this.stream.session?.socket);
  }

  /** Bytes of messages written and not yet handed to the connection (a client not reading leaves them here). */
  get pendingBytes(): number {
    return this.pending;
  }

  /** Whether a message written now can still reach the client. */
  get writable(): boolean {
    return !this.statusSent && !this.stream.destroyed && this.stream.writable;
  }

  /**
   * Writes one response message made of `parts` (`length` bytes in all). A small message is copied
   * whole behind its prefix and written once. A larger one is written without copying the shared
   * parts: the prefix and the parts go to the HTTP/2 stream in one corked batch (one writev; nghttp2
   * reads the shared buffers in place), a small first part (a stream's own fields) copied into the
   * prefix's buffer, one write fewer. `done` once the message was handed to the connection.
   * Returns whether the message was written (false: the call can no longer write).
   */
  write(parts: readonly Buffer[], length: number, done: () => void): boolean {
    const s = this.stream;
    if (!this.writable) return false;
    if (!this.headersSent) {
      this.headersSent = true;
      s.respond(responseHeaders(), { waitForTrailers: true });
    }
    this.writing.push(done);
    this.writingLengths.push(length);
    this.pending += length;
    if (length <= SMALL_MESSAGE) {
      const whole = Buffer.allocUnsafe(5 + length);
      whole[0] = 0; // not compressed
      whole.writeUInt32BE(length, 1);
      let at = 5;
      for (const p of parts) {
        whole.set(p, at);
        at += p.length;
      }
      s.write(whole, this.written);
      return true;
    }
    const head = parts.length > 1 && parts[0]!.length <= SMALL_HEAD ? parts[0] : undefined;
    const prefix = Buffer.allocUnsafe(5 + (head?.length ?? 0));
    prefix[0] = 0; // not compressed
    prefix.writeUInt32BE(length, 1);
    if (head) prefix.set(head, 5);
    s.cork();
    s.write(prefix);
    for (let i = head ? 1 : 0; i < parts.length - 1; i++) s.write(parts[i]);
    s.write(parts[parts.length - 1], this.written);
    s.uncork();
    return true;
  }

  /**
   * Ends the call with a status: in trailers after the responses written, or alone (a
   * trailers-only response) when none was. Later calls do nothing.
   */
  end(code: StatusCode, details = ''): void {
    if (this.statusSent) return;
    this.statusSent = true;
    clearTimeout(this.deadline);
    this.release();
    const s = this.stream;
    if (s.destroyed || s.closed) return;
    const status = { 'grpc-status': String(code), 'grpc-message': encodeURI(details) };
    if (this.headersSent) {
      s.once('wantTrailers', () => s.sendTrailers(status));
      s.end();
    } else {
      s.respond({ ...responseHeaders(), ...status }, { endStream: true });
    }
  }

  /** Starts delivering the stream's events to the method's listener; `ended` runs before its closed(). */
  start(listener: CallListener, timeout: string | undefined, ended: () => void): void {
    this.listener = listener;
    const s = this.stream;
    if (timeout !== undefined) this.startDeadline(timeout);
    s.on('data', (chunk: Buffer) => this.data(chunk));
    s.on('end', () => {
      this.halfClosed = true;
      if (!this.statusSent && !this.backlog.length) this.listener?.halfClose();
    });
    s.once('close', () => {
      this.statusSent = true;
      clearTimeout(this.deadline);
      this.release();
      const l = this.listener;
      this.listener = undefined;
      ended();
      l?.closed();
    });
  }

  private data(chunk: Buffer): void {
    if (this.statusSent) return;
    let messages;
    try {
      messages = this.reader.push(chunk);
    } catch (err) {
      if (!(err instanceof MessageTooLarge)) throw err;
      return this.end(Status.RESOURCE_EXHAUSTED, err.message);
    }
    for (const m of messages) {
      if (this.statusSent) return;
      if (m.compressed || this.backlog.length) this.backlog.push(m);
      else this.listener?.message(m.payload);
    }
    if (!this.statusSent && this.account()) this.inflateNext();
  }

  /**
   * Brings what the budget holds for this call to what it holds now, and times an unfinished
   * message; false once the call was ended for passing a bound.
   */
  private account(): boolean {
    let now = this.reader.pending;
    for (const m of this.backlog) now += m.payload.length;
    if (now > this.held) {
      const passed = this.limits.budget.take(this.connection, now - this.held);
      if (passed) {
        this.refuse(
          passed === 'connection'
            ? 'Too many bytes of unfinished requests on this connection'
            : 'Too many bytes of unfinished requests on this server',
        );
        return false;
      }
    } else this.limits.budget.give(this.connection, this.held - now);
    this.held = now;
    if (this.reader.pending === 0) {
      clearTimeout(this.messageTimer);
      this.messageTimer = undefined;
    } else
      this.messageTimer ??= setTimeout(
        () => this.refuse(`Message not complete within ${this.limits.messageTimeoutMs} ms`),
        this.limits.messageTimeoutMs,
      ).unref();
    return true;
  }

  /**
   * Ends the call with RESOURCE_EXHAUSTED and resets its stream once the status is out, so the
   * client stops sending what would only be read and dropped.
   */
  private refuse(details: string): void {
    const s = this.stream;
    this.end(Status.RESOURCE_EXHAUSTED, details);
    // After the status has gone to the session: a reset submitted before it would overtake it.
    const reset = () => setImmediate(() => !s.destroyed && !s.closed && s.close(http2.constants.NGHTTP2_NO_ERROR));
    if (s.writableFinished) reset();
    else s.once('finish', reset);
  }

  /** Gives back what the budget holds for this call. */
  private release(): void {
    clearTimeout(this.messageTimer);
    this.limits.budget.give(this.connection, this.held);
    this.held = 0;
    this.reader.clear();
    this.backlog.length = 0;
  }

  /** Inflates the backlog's messages one at a time, in order, off this thread. */
  private inflateNext(): void {
    if (this.inflatingOne || this.statusSent) return;
    const m = this.backlog[0];
    if (!m) {
      if (this.halfClosed) this.listener?.halfClose();
      return;
    }
    if (!m.compressed) {
      this.backlog.shift();
      this.listener?.message(m.payload);
      if (this.account()) this.inflateNext();
      return;
    }
    const method = this.encoding === 'gzip' ? gunzip : this.encoding === 'deflate' ? inflate : undefined;
    if (!method) {
      const why =
        this.encoding === 'identity'
          ? 'Received a compressed message without a grpc-encoding'
          : `Received message compressed with unsupported encoding "${this.encoding}"`;
      return this.end(this.encoding === 'identity' ? Status.INTERNAL : Status.UNIMPLEMENTED, why);
    }
    this.inflatingOne = true;
    const max = this.limits.maxInflatedBytes;
    this.limits.inflating.run((done) => {
      if (this.statusSent) return done();
      method(m.payload, { maxOutputLength: max }, (err, payload) => {
        done();
        this.inflatingOne = false;
        if (this.statusSent) return;
        this.backlog.shift();
        if (err) {
          if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
            this.end(Status.RESOURCE_EXHAUSTED, `Received message that decompresses to a size larger than ${max}`);
          else this.end(Status.INTERNAL, 'Failed to decompress message');
          return;
        }
        this.listener?.message(payload);
        if (this.account()) this.inflateNext();
      });
    });
  }

  private startDeadline(header: string): void {
    const m = DEADLINE.exec(header);
    if (!m) {
      process.nextTick(() => this.end(Status.INTERNAL, `Invalid grpc-timeout value "${header}"`));
      return;
    }
    const ms = Math.ceil(Number(m[1]) * DEADLINE_UNIT_MS[m[2]!]!);
    if (ms > MAX_TIMER_MS) return;
    this.deadline = setTimeout(() => this.end(Status.DEADLINE_EXCEEDED, 'Deadline exceeded'), ms);
    this.deadline.unref();
  }
}

export interface CallServer {
  /** Listens on host:port (port 0: a free one; `localhost`: its IPv4 and IPv6 addresses); resolves the port. */
  listen(host: string, port: number, opts?: { reusePort?: boolean }): Promise<number>;
  /** Open calls. */
  readonly calls: ReadonlySet<GrpcCall>;
  /**
   * Ends every open call with `code`, gives the statuses `flushMs` to go out, then stops listening
   * and destroys every connection.
   */
  close(code: StatusCode, details: string, flushMs: number): Promise<void>;
  /** New TLS connections get this certificate, key and CA; open ones keep theirs. */
  setTls(tls: ListenerTls): void;
}

export function createCallServer(o: CallServerOptions): CallServer {
  const settings = { maxConcurrentStreams: o.maxConcurrentStreams };
  // Node ends a session that buffers more than maxSessionMemory (10 MB by default) with
  // ENHANCE_YOUR_CALM, which a push of a large config to the streams of one connection can pass;
  // the unread bytes of each call are bounded by the caller instead (as grpc-js disables it too).
  const common = { settings, maxSessionMemory: Number.MAX_SAFE_INTEGER, maxSendHeaderBlockLength: 1 << 20 };
  const h2 = o.tls
    ? http2.createSecureServer({
        ...common,
        ...listenerOptions(o.tls),
      })
    : http2.createServer(common);
  h2.setTimeout(0);
  const sessions = new Set<Http2Session>();
  const calls = new Set<ServerCall>();
  const limits: ReceiveLimits = {
    maxReceiveBytes: o.maxReceiveBytes,
    maxInflatedBytes: o.maxInflatedBytes ?? Math.min(o.maxReceiveBytes, MAX_INFLATED_BYTES),
    messageTimeoutMs: o.messageTimeoutMs ?? 30_000,
    budget: new ReceiveBudget(
      o.maxHeldBytesPerConnection ?? 2 * o.maxReceiveBytes,
      o.maxHeldBytes ?? 8 * o.maxReceiveBytes,
    ),
    inflating: new TaskGate(INFLATING),
  };
  const listeners: NetServer[] = [];

  h2.on('session', (session) => {
    sessions.add(session);
    const stopTimers = watchConnection(session, o);
    session.once('close', () => {
      sessions.delete(session);
      stopTimers();
    });
  });
  // A session's errors destroy it (Node listens to them itself); a TLS socket's errors after the
  // handshake are left to the server's user (nodejs/node#35824) and would be thrown: its close ends
  // the session and every call on it.
  if (o.tls) h2.on('secureConnection', (socket: Socket) => socket.on('error', noop));

  h2.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', noop); // a reset stream emits one; its close ends the call
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    const path = headers[':path'] ?? '';
    const call = new ServerCall(stream, headers, limits);
    const handler = o.methods.get(path);
    if (!handler) return call.end(Status.UNIMPLEMENTED, `The server does not implement the method ${path}`);
    const listener = handler(call);
    if (!listener) return;
    calls.add(call);
    const timeout = headers['grpc-timeout'];
    call.start(listener, typeof timeout === 'string' ? timeout : undefined, () => calls.delete(call));
  });

  return {
    calls,
    async listen(host, port, opts = {}) {
      const hosts = host === 'localhost' ? ['127.0.0.1', '::1'] : [host];
      for (const [i, h] of hosts.entries()) {
        const net = createNetServer((socket) => h2.emit('connection', socket));
        try {
          port = await new Promise<number>((resolve, reject) => {
            net.once('error', reject);
            net.listen({ host: h, port, reusePort: opts.reusePort }, () =>
              resolve((net.address() as AddressInfo).port),
            );
          });
        } catch (err) {
          // localhost without IPv6: its IPv4 address is enough.
          if (i > 0 && (err as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') continue;
          for (const l of listeners) l.close();
          throw err;
        }
        // An accept that fails (EMFILE in a flood of connections) is reported as the listener's error;
        // it goes on accepting, so that must not be thrown.
        net.on('error', noop);
        listeners.push(net);
      }
      return port;
    },
    async close(code, details, flushMs) {
      for (const l of listeners) l.close();
      for (const call of [...calls]) call.end(code, details);
      await new Promise((r) => setTimeout(r, flushMs));
      for (const s of sessions) s.destroy();
    },
    setTls(tls) {
      if (!o.tls) throw new Error('this gRPC server does not serve TLS');
      (h2 as Http2SecureServer).setSecureContext(tls);
    },
  };
}

/** Keepalive pings and the maximum age of one connection; returns what stops their timers. */
function watchConnection(session: Http2Session, o: CallServerOptions): () => void {
  let keepalive: NodeJS.Timeout | undefined;
  let age: NodeJS.Timeout | undefined;
  let grace: NodeJS.Timeout | undefined;
  const schedulePing = () => {
    if (o.keepaliveTimeMs <= 0 || session.destroyed) return;
    keepalive = setTimeout(ping, o.keepaliveTimeMs).unref();
  };
  const ping = () => {
    if (session.destroyed) return;
    const timeout = setTimeout(() => session.destroy(), o.keepaliveTimeoutMs).unref();
    let sent = false;
    try {
      sent = session.ping((err) => {
        clearTimeout(timeout);
        if (err) session.destroy();
        else schedulePing();
      });
    } catch {
      // a closing session refuses pings
    }
    if (!sent) {
      clearTimeout(timeout);
      session.destroy();
    } else keepalive = timeout;
  };
  schedulePing();
  if (o.maxConnectionAgeMs) {
    const jitter = (Math.random() * 2 - 1) * (o.maxConnectionAgeMs / 10);
    age = setTimeout(() => {
      try {
        session.goaway(http2.constants.NGHTTP2_NO_ERROR, 2 ** 31 - 1, MAX_AGE_DEBUG);
        session.close();
      } catch {
        session.destroy();
        return;
      }
      grace = setTimeout(
        () => session.destroy(),
        o.maxConnectionAgeGraceMs ?? DEFAULT_MAX_CONNECTION_AGE_GRACE_MS,
      ).unref();
    }, o.maxConnectionAgeMs + jitter).unref();
  }
  return () => {
    clearTimeout(keepalive);
    clearTimeout(age);
    clearTimeout(grace);
  };
}
