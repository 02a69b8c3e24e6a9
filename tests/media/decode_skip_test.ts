/**
 * Skipping unshown frames (`skipUnshown`, issue 14 §1): the same frames, byte for byte, with the switch on and
 * off, over H.264 with B-pyramids (and `-b_strategy 2`), HEVC, VP9, AV1 and MPEG-4, in MP4, MKV, MPEG-TS, WebM
 * and AVI, windows in the first and the last GOP and across a GOP boundary, every sampling kind (with and
 * without resampling), FFmpeg frame threads; and the start-over path (a stream that breaks what skipping
 * assumes). The switch-off path is the decode `clip_truth_test.ts` checks against the ffmpeg CLI.
 */
import assert from "node:assert/strict";
import { type DecodeOptions, decodeVideo } from "../../src/media/decode.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { type ClipSpec, generateClip, hasFfmpegCliSync, lacksDecoder } from "../helpers/media.ts";
import { readPackets, rebuildPackets } from "../helpers/read_packets.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";

const CLI = hasFfmpegCliSync();

/** 4 s at 25 fps, keyframes every 1.6 s (0, 1.6, 3.2): the last GOP is [3.2, 4). */
const base = { width: 96, height: 64, fps: 25, durationSec: 4, gop: 40 };
const SOURCES: { name: string; media: ClipSpec; skips: boolean }[] = [
  {
    name: "H.264 B-pyramid MP4",
    media: { ...base, bframes: 3, extraArgs: ["-x264-params", "b-pyramid=normal"] },
    skips: true,
  },
  {
    name: "H.264 -b_strategy 2 MKV",
    media: { ...base, container: "mkv", bframes: 3, extraArgs: ["-b_strategy", "2"] },
    skips: true,
  },
  { name: "H.264 MPEG-TS", media: { ...base, container: "ts", bframes: 3 }, skips: true },
  { name: "HEVC MKV", media: { ...base, codec: "libx265", container: "mkv", bframes: 3 }, skips: true },
  { name: "VP9 WebM", media: { ...base, codec: "libvpx-vp9", container: "webm" }, skips: false },
  {
    name: "AV1 MP4",
    media: { ...base, codec: "libaom-av1", durationSec: 2, extraArgs: ["-cpu-used", "8", "-row-mt", "1"] },
    skips: false,
  },
  { name: "MPEG-4 AVI", media: { ...base, codec: "mpeg4", container: "avi", bframes: 2 }, skips: false },
  { name: "MPEG-4 MKV", media: { ...base, codec: "mpeg4", container: "mkv", bframes: 2 }, skips: true },
];

/** Windows relative to the stream's start: first GOP, across the boundary at 1.6 s, last GOP. */
const WINDOWS: [number, number][] = [[0.36, 0.96], [1.3, 1.94], [3.46, 3.98]];
const SAMPLINGS: DecodeOptions[] = [
  { numFrames: 6 },
  { sampling: { kind: "stride", stride: 3 }, numFrames: 4 },
  { frameRate: 8 },
  { sampling: { kind: "uniform" }, numFrames: 5 },
];

interface Compared {
  decodedOn: number;
  decodedOff: number;
  skipped: number;
}

/** Decodes `packets()` with the switch on and off; asserts the same frames and times. */
async function compare(packets: () => VideoPackets, opts: DecodeOptions, what: string): Promise<Compared> {
  const o = { width: 32, height: 24, ...opts };
  const on = await decodeVideo(packets(), o);
  const off = await decodeVideo(packets(), { ...o, skipUnshown: false });
  assert.deepEqual([...on.pts], [...off.pts], `${what}: frame times`);
  assert.ok(on.pts.length > 0, `${what}: frames`);
  assert.ok(sameBytes(on.data, off.data), `${what}: pixels`);
  assert.equal(off.skippedFrames, 0);
  return { decodedOn: on.decodedFrames, decodedOff: off.decodedFrames, skipped: on.skippedFrames };
}

for (const src of SOURCES) {
  Deno.test({
    name: `skipUnshown: ${src.name}: the same frames with skipping on and off, every window and sampling`,
    ignore: !CLI || (src.name.startsWith("AV1") && lacksDecoder("av1")),
    async fn() {
      const path = await generateClip(src.media);
      const start = readPackets(path).startTimeSec;
      let skipped = 0;
      for (const [a, b] of WINDOWS) {
        if (b > (src.media.durationSec ?? 4)) continue;
        const w: [number, number] = [start + a, start + b];
        for (const s of SAMPLINGS) {
          const r = await compare(
            () => readPackets(path, { window: w }),
            s,
            `${src.name} ${w} ${JSON.stringify(s)}`,
          );
          assert.ok(
            r.decodedOn <= r.decodedOff,
            `${src.name}: never decodes more (${r.decodedOn} > ${r.decodedOff})`,
          );
          skipped += r.skipped;
        }
      }
      // A whole stream resampled to 10 fps: 3 of every 5 frames are dropped.
      const whole = await compare(() => readPackets(path), { frameRate: 10 }, `${src.name} whole stream`);
      skipped += whole.skipped;
      if (src.skips) assert.ok(skipped > 0, `${src.name}: non-reference frames were skipped`);
      else assert.equal(skipped, 0, `${src.name}: FFmpeg's decoder skips nothing here`);
    },
  });
}

Deno.test({
  name: "skipUnshown: H.264 with FFmpeg frame threads: the same frames, and the skipped ones are not decoded",
  ignore: !CLI,
  async fn() {
    const path = await generateClip(SOURCES[0].media);
    let skipped = 0;
    for (const [a, b] of WINDOWS) {
      const r = await compare(
        () => readPackets(path, { window: [a, b] }),
        { threads: 2 },
        `threads 2 [${a}, ${b})`,
      );
      assert.ok(r.decodedOn <= r.decodedOff);
      skipped += r.skipped;
    }
    assert.ok(skipped > 0);
    // Deep in a GOP, about half the frames before the window are non-reference B-frames.
    const p = readPackets(path, { window: [3.0, 3.2] });
    const on = await decodeVideo(p, { width: 32, height: 24 });
    assert.ok(on.skippedFrames >= 10, `skipped ${on.skippedFrames}`);
    assert.ok(on.decodedFrames + on.skippedFrames <= 42, `${on.decodedFrames} + ${on.skippedFrames}`);
  },
});

/** `p` with packet `i`'s payload replaced by `payload`. */
function withPayload(p: VideoPackets, i: number, payload: Uint8Array): VideoPackets {
  return rebuildPackets(
    p,
    Array.from({ length: p.numPackets }, (_, k) => k),
    (k) => k === i ? payload : undefined,
  );
}

Deno.test({
  name:
    "skipUnshown: a packet that gives no frame starts the pass over without skipping: still the same frames",
  ignore: !CLI,
  async fn() {
    const path = await generateClip(SOURCES[0].media);
    const w: [number, number] = [1.3, 1.94];
    const clean = readPackets(path, { window: w });
    // A shown frame's packet holds only an access unit delimiter (length-prefixed, as in MP4): no picture.
    const shown = clean.pts.findIndex((t) => Number(t) * clean.timeBase[0] / clean.timeBase[1] >= 1.45);
    const aud = Uint8Array.of(0, 0, 0, 2, 0x09, 0xf0);
    const broken = () => withPayload(readPackets(path, { window: w }), shown, aud);
    const r = await compare(broken, { numFrames: 8 }, "a packet without a picture");
    // The skipping pass noticed the missing frame and decoded again from the keyframe.
    assert.ok(
      r.decodedOn > r.decodedOff,
      `decoded ${r.decodedOn} (with the first attempt) vs ${r.decodedOff}`,
    );
    assert.equal(r.skipped, 0);
  },
});
