import assert from "node:assert/strict";
import { ProtocolError } from "../../src/errors.ts";
import { MessageReader } from "../../src/backend/message_reader.ts";
import { MessageWriter } from "../../src/backend/message_writer.ts";
import {
  crc32,
  encodeFrame,
  FrameType,
  HEADER_SIZE,
  MAGIC,
  PROTOCOL_VERSION,
} from "../../src/backend/protocol.ts";
import { bytes } from "./fixtures/items.ts";

/** A sink that records writes and accepts at most `max` bytes per call (partial writes). */
class Recorder {
  chunks: Uint8Array[] = [];
  calls = 0;
  constructor(readonly max = Infinity) {}
  writeSync(p: Uint8Array): number {
    this.calls++;
    const n = Math.min(p.length, this.max);
    this.chunks.push(p.slice(0, n));
    return n;
  }
  all(): Uint8Array {
    const out = new Uint8Array(this.chunks.reduce((a, c) => a + c.length, 0));
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

function split(stream: Uint8Array, seed: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let x = seed;
  for (let i = 0; i < stream.length;) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const n = 1 + (x % 97);
    parts.push(stream.subarray(i, i + n));
    i += n;
  }
  return parts;
}

Deno.test("crc32 matches the standard check value", () => {
  assert.equal(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
});

Deno.test("header layout: magic, version, type, length, sequence and header CRC at their documented offsets", () => {
  const f = encodeFrame(FrameType.LOG, new Uint8Array([1, 2, 3]), 7);
  const v = new DataView(f.buffer);
  assert.equal(f.length, HEADER_SIZE + 3);
  assert.deepEqual([...f.subarray(0, 4)], [0x53, 0x4c, 0x42, 0x4b]); // "SLBK"
  assert.equal(v.getUint32(0, true), MAGIC);
  assert.equal(f[4], PROTOCOL_VERSION);
  assert.equal(PROTOCOL_VERSION, 4); // 2: aligned JSON blobs; 3: heartbeats; 4: errors with their class
  assert.equal(f[5], FrameType.LOG);
  assert.equal(v.getUint16(6, true), 1); // payload CRC flag
  assert.equal(v.getUint32(8, true), 3);
  assert.equal(v.getUint32(12, true), 7);
  assert.equal(v.getUint32(16, true), crc32(new Uint8Array([1, 2, 3])));
  assert.equal(v.getUint32(20, true), crc32(f, 0, 20));
});

Deno.test("writer + reader round trip over arbitrary chunk boundaries and partial writes", () => {
  const sink = new Recorder(1000);
  const w = new MessageWriter(sink);
  const payloads = [bytes(0, 0), bytes(5, 1), bytes(70_000, 2), bytes(16_384, 3), bytes(100, 4)];
  w.write(FrameType.ITEM, [payloads[0]]);
  w.write(FrameType.ITEM, [payloads[1].subarray(0, 2), payloads[1].subarray(2)], true);
  w.write(FrameType.ITEM, [payloads[2]]);
  w.write(FrameType.STATS, [payloads[3]], true);
  w.write(FrameType.END, [payloads[4].subarray(0, 50), payloads[4].subarray(50)]);
  const stream = sink.all();
  assert.equal(w.bytesWritten, stream.length);
  assert.equal(stream.length, 5 * HEADER_SIZE + payloads.reduce((a, p) => a + p.length, 0));
  for (const seed of [1, 2, 3]) {
    const r = new MessageReader();
    const frames = split(stream, seed).flatMap((c) => r.push(c));
    r.end();
    assert.deepEqual(frames.map((f) => f.type), [1, 1, 1, FrameType.STATS, FrameType.END]);
    assert.deepEqual(frames.map((f) => f.seq), [0, 1, 2, 3, 4]);
    frames.forEach((f, i) => assert.deepEqual(f.payload, payloads[i]));
    assert.equal(frames[2].offset, 2 * HEADER_SIZE + 5);
  }
});

Deno.test("a small frame costs one write call; a big payload is written from its own memory", () => {
  const sink = new Recorder();
  const w = new MessageWriter(sink);
  w.write(FrameType.ITEM, [Uint8Array.of(1), bytes(4096, 1)]);
  assert.equal(sink.calls, 1);
  const big = bytes(1 << 20, 2);
  w.write(FrameType.ITEM, [Uint8Array.of(1), big]);
  assert.equal(sink.calls, 3);
  assert.equal(sink.chunks[2].length, big.length);
});

function expectProtocolError(fn: () => unknown, offset: number, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ProtocolError, `not a ProtocolError: ${e}`);
    assert.equal(e.offset, offset);
    assert.match(e.message, pattern);
    return true;
  });
}

Deno.test("damaged headers name the offset of the damage", () => {
  const good = encodeFrame(FrameType.LOG, bytes(10, 1), 0);
  const second = encodeFrame(FrameType.LOG, bytes(10, 2), 1);
  const stream = new Uint8Array([...good, ...second]);
  const at = good.length;
  const cases: [number, RegExp, number][] = [
    [at + 0, /magic/, at],
    [at + 4, /version/, at + 4],
    [at + 9, /header CRC/, at + 20],
    [at + 13, /header CRC/, at + 20],
    [at + 30, /payload CRC/, at + HEADER_SIZE],
  ];
  for (const [flip, pattern, offset] of cases) {
    const bad = stream.slice();
    bad[flip] ^= 0x40;
    const r = new MessageReader();
    expectProtocolError(() => r.push(bad), offset, pattern);
    expectProtocolError(() => r.push(new Uint8Array(1)), offset, pattern); // stays failed
  }
});

Deno.test("sequence gaps, unknown types, disallowed types and oversize lengths are rejected", () => {
  const a = encodeFrame(FrameType.LOG, new Uint8Array(0), 0);
  const skip = encodeFrame(FrameType.LOG, new Uint8Array(0), 2);
  expectProtocolError(
    () => new MessageReader().push(new Uint8Array([...a, ...skip])),
    a.length + 12,
    /sequence 2/,
  );
  const credit = encodeFrame(FrameType.CREDIT, new Uint8Array(4), 0);
  const childOnly = new MessageReader({ allowedTypes: new Set([FrameType.ITEM]) });
  expectProtocolError(() => childOnly.push(credit), 5, /unexpected CREDIT/);
  const big = encodeFrame(FrameType.ITEM, new Uint8Array(100), 0);
  expectProtocolError(() => new MessageReader({ maxPayload: 99 }).push(big), 8, /exceeds the limit/);
});

Deno.test("end() inside a header or a payload is a ProtocolError; at a frame boundary it is fine", () => {
  const f = encodeFrame(FrameType.ITEM, bytes(50, 1), 0, false);
  for (let cut = 1; cut < f.length; cut++) {
    const r = new MessageReader();
    assert.deepEqual(r.push(f.subarray(0, cut)), []);
    expectProtocolError(
      () => r.end(),
      cut,
      cut < HEADER_SIZE ? /inside a frame header/ : /inside the payload/,
    );
  }
  const r = new MessageReader();
  assert.equal(r.push(f).length, 1);
  r.end();
  assert.equal(r.offset, f.length);
});
