/**
 * gRPC's length-prefixed messages (a flag byte, a 4-byte big-endian length, the payload) cut out
 * of a call's DATA frames, which split and join messages anywhere. A message in one frame (an xDS
 * ACK nearly always is) comes out as a view of that frame, never copied; one spread over frames is
 * joined once, when its last byte arrives, so a large request costs one copy whatever its frames.
 */

export interface FramedMessage {
  /** The flag byte's compressed bit: the payload is in the call's grpc-encoding. */
  compressed: boolean;
  payload: Buffer;
}

export class MessageTooLarge extends Error {}

const HEADER = 5;

export class MessageReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Payload length of the message being read, once its header is in; -1 before. */
  private need = -1;
  private compressed = false;

  /** @param maxBytes largest payload accepted; a larger one is refused from its header alone. */
  constructor(readonly maxBytes: number) {}

  /** Takes a frame's bytes; returns the messages it completed. Throws MessageTooLarge. */
  push(chunk: Buffer): FramedMessage[] {
    const out: FramedMessage[] = [];
    if (chunk.length === 0) return out;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < HEADER) return out;
        const head = this.chunks[0]!.length >= HEADER ? this.chunks[0]! : this.join();
        const length = head.readUInt32BE(1);
        if (length > this.maxBytes)
          throw new MessageTooLarge(`Received message larger than max (${length} vs. ${this.maxBytes})`);
        this.compressed = (head[0]! & 1) === 1;
        this.need = length;
      }
      if (this.buffered < HEADER + this.need) return out;
      const all = this.chunks.length === 1 ? this.chunks[0]! : this.join();
      const end = HEADER + this.need;
      out.push({ compressed: this.compressed, payload: all.subarray(HEADER, end) });
      this.need = -1;
      this.buffered -= end;
      this.chunks = this.buffered > 0 ? [all.subarray(end)] : [];
    }
  }

  /** Bytes held of a message not complete yet (and of the next ones' first bytes). */
  get pending(): number {
    return this.buffered;
  }

  /** Drops what is held: the call is over. */
  clear(): void {
    this.chunks = [];
    this.buffered = 0;
    this.need = -1;
  }

  private join(): Buffer {
    const all = Buffer.concat(this.chunks, this.buffered);
    this.chunks = [all];
    return all;
  }
}
