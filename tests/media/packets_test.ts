import assert from "node:assert/strict";
import { ProtocolError } from "../../src/errors.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { PACKETS_FORMAT_VERSION, PACKETS_HEADER_SIZE } from "../../src/media/packet_format.ts";
import {
  inWindow,
  NOPTS,
  ptsToSeconds,
  VideoPackets,
  type VideoPacketsInit,
} from "../../src/media/packets.ts";
import { sharedMedia } from "../helpers/media.ts";

/** A small hand-built VideoPackets: 3 packets of 2, 0 and 3 bytes; one NOPTS. */
function sample(): VideoPackets {
  const init: VideoPacketsInit = {
    source: "clip é.mp4",
    streamIndex: 2,
    codec: "h264",
    codecId: 27,
    codecTag: 0x31637661,
    profile: 100,
    level: 31,
    width: 320,
    height: 180,
    format: 0,
    bitsPerRawSample: 8,
    fieldOrder: 1,
    colorRange: 1,
    colorPrimaries: 1,
    colorTrc: 1,
    colorSpace: 1,
    chromaLocation: 1,
    sampleAspectRatio: [1, 1],
    extradata: new Uint8Array([1, 100, 0, 31, 255]),
    timeBase: [1, 12800],
    frameRate: 25,
    rotation: -90,
    startTimeSec: 0,
    window: [0.5, 1.25],
    firstFrameIndex: 37,
    pts: new BigInt64Array([6400n, NOPTS, 7424n]),
    dts: new BigInt64Array([5376n, 5888n, 6400n]),
    duration: new BigInt64Array([512n, 512n, 512n]),
    flags: new Uint32Array([1, 0, 0]),
    offsets: new Uint32Array([0, 2, 2]),
    sizes: new Uint32Array([2, 0, 3]),
    data: new Uint8Array([9, 8, 7, 6, 5]),
  };
  return new VideoPackets(init);
}

Deno.test("ptsToSeconds and inWindow follow ffprobe's pts_time and a half-open window", () => {
  assert.equal(ptsToSeconds(6400n, [1, 12800]), 0.5);
  assert.equal(ptsToSeconds(1001, [1001, 30000]), 1001 * (1001 / 30000));
  assert.equal(inWindow([0.5, 1], 0.5), true);
  assert.equal(inWindow([0.5, 1], 1), false);
  assert.equal(inWindow([0.5, 1], 0.49), false);
  assert.equal(inWindow(null, -3), true);
  const p = sample();
  assert.equal(p.ptsSeconds(0), 0.5);
  assert.equal(p.ptsSeconds(1), 5888 / 12800, "falls back to dts without pts");
  assert.equal(p.inWindow(1.25), false);
  assert.deepEqual(p.keyframeIndices, [0]);
  assert.deepEqual([...p.packet(2)], [7, 6, 5]);
});

Deno.test("serialize/deserialize round-trips every field (version 1 layout, documented header size)", () => {
  const p = sample();
  const bytes = p.serialize();
  const dv = new DataView(bytes.buffer);
  assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "SLVP");
  assert.equal(dv.getUint32(4, true), PACKETS_FORMAT_VERSION);
  assert.equal(dv.getUint32(8, true), PACKETS_HEADER_SIZE);
  assert.equal(dv.getUint32(12, true), 3);
  const back = VideoPackets.deserialize(bytes);
  assert.ok(back instanceof VideoPackets);
  assert.deepEqual({ ...back }, { ...p });
  const whole = new VideoPackets({ ...p, window: null, firstFrameIndex: undefined });
  const wholeBack = VideoPackets.deserialize(whole.serialize());
  assert.equal(wholeBack.window, null);
  assert.equal(wholeBack.firstFrameIndex, undefined);
  assert.equal(back.firstFrameIndex, 37);
  // Works from an unaligned view inside a bigger buffer.
  const padded = new Uint8Array(bytes.length + 3);
  padded.set(bytes, 3);
  assert.deepEqual({ ...VideoPackets.deserialize(padded.subarray(3)) }, { ...p });
});

Deno.test({
  name: "serialize/deserialize round-trips demuxed packets byte for byte",
  ignore: sharedMedia("h264_nasa_bframes_aac.mp4") === null,
  fn: async () => {
    const p = await demuxVideo(sharedMedia("h264_nasa_bframes_aac.mp4")!, { streamIndex: 0, window: [1, 3] });
    const back = VideoPackets.deserialize(p.serialize());
    assert.deepEqual({ ...back }, { ...p });
  },
});

Deno.test("deserialize reads the older headers (152 bytes: no endSec; 160: no firstFrameIndex)", () => {
  const p = new VideoPackets({ ...sample(), endSec: 1.5 });
  const bytes = p.serialize();
  for (const size of [152, 160]) {
    // The same object written with the older header: its fixed part cut at `size`, the flags it could say.
    const old = new Uint8Array(bytes.length - (PACKETS_HEADER_SIZE - size));
    old.set(bytes.subarray(0, size));
    old.set(bytes.subarray(PACKETS_HEADER_SIZE), size);
    const dv = new DataView(old.buffer);
    dv.setUint32(8, size, true);
    dv.setUint32(120, size === 152 ? 1 : 3, true);
    const back = VideoPackets.deserialize(old);
    assert.equal(back.endSec, size === 152 ? undefined : 1.5);
    assert.equal(back.firstFrameIndex, undefined);
    assert.deepEqual([...back.pts], [...p.pts]);
  }
});

Deno.test("deserialize rejects every truncation with ProtocolError", () => {
  const bytes = sample().serialize();
  for (let n = 0; n < bytes.length; n++) {
    assert.throws(() => VideoPackets.deserialize(bytes.subarray(0, n)), ProtocolError, `length ${n}`);
  }
  const longer = new Uint8Array(bytes.length + 8);
  longer.set(bytes);
  assert.throws(() => VideoPackets.deserialize(longer), ProtocolError, "trailing bytes");
});

Deno.test("deserialize rejects bad magic, version, lengths and packet offsets with ProtocolError", () => {
  const good = sample().serialize();
  const mutate = (offset: number, value: number) => {
    const b = good.slice();
    new DataView(b.buffer).setUint32(offset, value, true);
    return b;
  };
  const tableStart = (PACKETS_HEADER_SIZE + "clip é.mp4".length + 1 + 4 + 5 + 7) & ~7;
  const cases: [string, Uint8Array, RegExp][] = [
    ["magic", mutate(0, 0x12345678), /magic/],
    ["version", mutate(4, 2), /version 2/],
    ["header size", mutate(8, 8), /header size/],
    ["packet count", mutate(12, 0xffffffff), /lengths do not add up/],
    ["payload length", mutate(28, 4), /lengths do not add up/],
    ["extradata length", mutate(24, 0x7fffffff), /lengths do not add up/],
    ["packet offset", mutate(tableStart + 28 * 3 + 4 * 2, 4), /packet 2 .*outside/],
    ["packet size", mutate(tableStart + 32 * 3, 0xffffffff), /packet 0 .*outside/],
    ["time base", mutate(108, 0), /time base/],
    ["flags", mutate(120, 8), /flags/],
    [
      "first frame index",
      (() => {
        const b = good.slice();
        new DataView(b.buffer).setFloat64(160, 1.5, true);
        return b;
      })(),
      /first frame index 1\.5/,
    ],
    ["reserved", mutate(124, 1), /reserved/],
    ["stream index", mutate(32, 0x80000000), /stream index/],
    ["rotation", mutate(92, 720), /rotation/],
  ];
  for (const [what, bytes, message] of cases) {
    assert.throws(() => VideoPackets.deserialize(bytes), (e: unknown) => {
      assert.ok(e instanceof ProtocolError, `${what}: ${e}`);
      assert.match(e.message, message, what);
      return true;
    });
  }
});

Deno.test("a flipped bit anywhere in the header is a ProtocolError or a valid object, never a RangeError", () => {
  // Byte 15 is the top byte of the packet count: 2^31 packets made the table size wrap in a 32-bit pad helper.
  const good = sample().serialize();
  for (let byte = 0; byte < PACKETS_HEADER_SIZE; byte++) {
    for (let bit = 0; bit < 8; bit++) {
      const b = good.slice();
      b[byte] ^= 1 << bit;
      try {
        VideoPackets.deserialize(b);
      } catch (e) {
        assert.ok(e instanceof ProtocolError, `byte ${byte} bit ${bit}: ${e}`);
      }
    }
  }
  const b = good.slice();
  b[15] ^= 0x80;
  assert.throws(() => VideoPackets.deserialize(b), ProtocolError);
});

Deno.test("deserialize refuses packet flags demuxers never set (AV_PKT_FLAG_TRUSTED lets FFmpeg follow pointers)", () => {
  const p = sample();
  for (const flag of [8, 0x20, 0x80000000]) {
    const bytes = new VideoPackets({ ...p, flags: Uint32Array.of(1, flag, 0) }).serialize();
    assert.throws(() => VideoPackets.deserialize(bytes), (e: unknown) => {
      assert.ok(e instanceof ProtocolError);
      assert.match(e.message, /packet 1 has flags/);
      return true;
    });
  }
  for (const flag of [0, 1, 2, 4, 0x10, 0x17]) {
    assert.equal(
      VideoPackets.deserialize(new VideoPackets({ ...p, flags: Uint32Array.of(flag, 0, 0) }).serialize())
        .flags[0],
      flag,
    );
  }
});

Deno.test("deserialize survives random corruption: a valid object or ProtocolError, nothing else", () => {
  const good = sample().serialize();
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  for (let iter = 0; iter < 2000; iter++) {
    const b = good.slice();
    for (let k = 0; k < 1 + (next() % 4); k++) b[next() % b.length] = next() & 0xff;
    try {
      const p = VideoPackets.deserialize(b);
      for (let i = 0; i < p.numPackets; i++) assert.ok(p.offsets[i] + p.sizes[i] <= p.data.length);
    } catch (e) {
      assert.ok(e instanceof ProtocolError, `iteration ${iter}: ${e}`);
    }
  }
});

Deno.test("transferables move the buffers; fromStructured restores the class after postMessage-style cloning", () => {
  const p = sample();
  const clone = structuredClone(p, { transfer: p.transferables() }) as unknown as VideoPacketsInit;
  assert.equal(p.data.byteLength, 0, "payload moved, not copied");
  const back = VideoPackets.fromStructured(clone);
  assert.ok(back instanceof VideoPackets);
  assert.deepEqual([...back.packet(0)], [9, 8]);
  assert.deepEqual(VideoPackets.deserialize(back.serialize()).pts, back.pts);
});
