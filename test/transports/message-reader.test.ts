/**
 * gRPC message framing (src/transports/grpc/message-reader.ts), table-driven: however the frames
 * cut the bytes, the same messages come out, in order; one that fits in its frame is a view of it;
 * a length above the limit is refused from the header.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MessageReader, MessageTooLarge } from '../../src/transports/grpc/message-reader.ts';

const frame = (payload: string, compressed = false) => {
  const body = Buffer.from(payload);
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
};

/** Cuts `bytes` at the given offsets. */
const cut = (bytes: Buffer, at: number[]) =>
  [0, ...at, bytes.length].slice(1).map((end, i, ends) => bytes.subarray(i ? ends[i - 1] : 0, end));

const two = Buffer.concat([frame('hello'), frame('', true), frame('world!')]);

const ROWS: { name: string; chunks: Buffer[]; want: string[] }[] = [
  { name: 'one message in one chunk', chunks: [frame('abc')], want: ['abc'] },
  { name: 'three messages in one chunk, one empty and compressed', chunks: [two], want: ['hello', '*', 'world!'] },
  { name: 'header split after one byte', chunks: cut(frame('abc'), [1]), want: ['abc'] },
  { name: 'header split after four bytes', chunks: cut(frame('abc'), [4]), want: ['abc'] },
  { name: 'split between header and payload', chunks: cut(frame('abc'), [5]), want: ['abc'] },
  { name: 'payload over three chunks', chunks: cut(frame('abcdefgh'), [6, 9]), want: ['abcdefgh'] },
  {
    name: 'every byte its own chunk',
    chunks: cut(
      two,
      Array.from({ length: two.length - 1 }, (_, i) => i + 1),
    ),
    want: ['hello', '*', 'world!'],
  },
  { name: 'messages cut across each other', chunks: cut(two, [7, 12, 15]), want: ['hello', '*', 'world!'] },
  { name: 'an empty chunk between', chunks: [frame('a'), Buffer.alloc(0), frame('b')], want: ['a', 'b'] },
  { name: 'an incomplete message stays pending', chunks: [frame('a'), frame('bcd').subarray(0, 6)], want: ['a'] },
];

for (const row of ROWS) {
  test(`framing: ${row.name}`, () => {
    const r = new MessageReader(1024);
    const got: string[] = [];
    for (const c of row.chunks)
      for (const m of r.push(c)) got.push(m.compressed ? '*' + m.payload.toString() : m.payload.toString());
    assert.equal(got, row.want);
  });
}

test('a message within its chunk is a view of it, not a copy', () => {
  const chunk = Buffer.concat([frame('first'), frame('second')]);
  const [a, b] = new MessageReader(1024).push(chunk);
  assert.is(a!.payload.buffer, chunk.buffer);
  assert.is(b!.payload.buffer, chunk.buffer);
  assert.is(b!.payload.byteOffset, chunk.byteOffset + 10 + 5);
});

test('the limit: a payload of exactly the limit passes, one byte more is refused from its header alone', () => {
  assert.is(new MessageReader(3).push(frame('abc'))[0]!.payload.toString(), 'abc');
  const r = new MessageReader(3);
  const head = frame('abcd').subarray(0, 5);
  assert.throws(
    () => r.push(head),
    (e: Error) => e instanceof MessageTooLarge && /larger than max \(4 vs\. 3\)/.test(e.message),
  );
});

test.run();
