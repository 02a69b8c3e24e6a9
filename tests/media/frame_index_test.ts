/**
 * Frame identity (issue 25 item 2): each decoded frame's `frameIndex` is the index, in ffprobe's presentation
 * order, of the frame with that pts — for windows at the start of a stream (read from its first packet), in its
 * middle and at its end (reached by seeking: the keyframe table supplies what came before), on the shared media
 * (B-frames in MP4 and its second video stream, a rotated MOV, AV1 MP4, VP9 WebM, H.264 MKV), a
 * variable-frame-rate recording with gaps, an MP4 whose edit list discards leading frames and an MPEG-TS file
 * (which seeks by dts); resampled positions give the index of the frame they show. A stream whose
 * timestamps cannot tell says so (null); the keyframe table is read once per file per thread.
 */
import assert from "node:assert/strict";
import { demuxVideo, type TimeWindow } from "../../src/media/demux.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { keyframeScans } from "../../src/media/keyframe_table.ts";
import {
  ffprobeFrames,
  generateClip,
  hasFfmpegCliSync,
  lacksDecoder,
  runCli,
  sharedMedia,
  tempFile,
  vfrClipSpec,
} from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();

/** ffprobe's frames of the stream sorted by pts (presentation order): index k has pts `order[k]`. */
async function presentationOrder(path: string, stream: number): Promise<number[]> {
  const pts = (await ffprobeFrames(path, stream)).map((f) => f.pts ?? f.bestEffortTimestamp ?? NaN);
  assert.ok(pts.every(Number.isFinite), `${path}: every frame has a timestamp`);
  return pts.sort((a, b) => a - b);
}

/** Windows at the start, a third in, two thirds in and at the end of a stream of `[first, last]` seconds. */
function windowsOf(first: number, last: number, len: number): TimeWindow[] {
  const d = last - first;
  return [
    [first, first + len],
    [first + d / 3, first + d / 3 + len],
    [first + (2 * d) / 3 + 0.013, first + (2 * d) / 3 + len],
    [last - len / 2, last + 0.01],
  ];
}

/** Decodes `p` and checks each frame's index against ffprobe's order; returns the frames checked. */
async function check(
  p: VideoPackets,
  order: number[],
  what: string,
  frameRate?: number,
  end = Infinity,
): Promise<number> {
  const f = await decodeVideo(p, { width: 16, height: 16, ...(frameRate ? { frameRate } : {}) });
  assert.ok(f.frameIndex !== null, `${what}: an index`);
  assert.equal(f.frameIndex.length, f.pts.length);
  const tb = p.timeBase;
  for (let k = 0; k < f.pts.length; k++) {
    // Resampled positions report their grid time; the frame they show is the one whose index they give.
    const shown = order[f.frameIndex[k]] * (tb[0] / tb[1]);
    if (frameRate === undefined) {
      assert.ok(
        Math.abs(shown - f.pts[k]) < 1e-9,
        `${what} frame ${k}: index ${f.frameIndex[k]} is ${shown} s`,
      );
    } else {
      // The latest frame at or before the position's time, rounded to the grid (fps filter): never after the next,
      // and the frame after it is too late (or past the window's end).
      assert.ok(
        shown < f.pts[k] + 0.5 / frameRate + 1e-9,
        `${what} position ${k}: ${shown} s for ${f.pts[k]}`,
      );
      const next = order[f.frameIndex[k] + 1] * (tb[0] / tb[1]);
      assert.ok(
        !(next < f.pts[k] + 0.5 / frameRate - 1e-9 && next < end),
        `${what} position ${k}: frame ${f.frameIndex[k] + 1} (${next} s) is on screen at ${f.pts[k]}`,
      );
    }
  }
  return f.pts.length;
}

/** A video to check: `temporary` ones are removed after. */
const SOURCES: { name: string; path: () => Promise<string | null>; stream: number; temporary?: boolean }[] = [
  {
    name: "B-frames MP4 (shared)",
    path: () => Promise.resolve(sharedMedia("h264_nasa_bframes_aac.mp4")),
    stream: 0,
  },
  {
    name: "rotated MOV (shared)",
    path: () => Promise.resolve(sharedMedia("h264_rot90_3frames.mov")),
    stream: 0,
  },
  {
    name: "second video stream, 29.97 fps, of the B-frames MP4 (shared)",
    path: () => Promise.resolve(sharedMedia("h264_nasa_bframes_aac.mp4")),
    stream: 3,
  },
  { name: "AV1 MP4 (shared)", path: () => Promise.resolve(sharedMedia("av1_aac.mp4")), stream: 0 },
  { name: "VP9 WebM (shared)", path: () => Promise.resolve(sharedMedia("vp9_opus_bbb.webm")), stream: 0 },
  {
    name: "H.264 MKV (shared)",
    path: () => Promise.resolve(sharedMedia("h264_opus_pancake.mkv")),
    stream: 0,
  },
  {
    name: "VFR MKV with 2.5 s gaps",
    path: () =>
      generateClip(
        vfrClipSpec({ gaps: [[1.02, 3.5], [4.02, 6.5]], keyframes: [0, 3.52, 6.52], container: "mkv" }),
      ),
    stream: 0,
  },
  {
    name: "MP4 whose edit list discards its first 8 frames (stream copy from 1.3 s)",
    path: async () => {
      const src = await generateClip({ width: 64, height: 48, durationSec: 6, gop: 25, bframes: 2 });
      const out = await tempFile(".mp4");
      const r = await runCli("ffmpeg", ["-v", "error", "-ss", "1.3", "-i", src, "-c", "copy", "-y", out]);
      assert.equal(r.code, 0, r.stderr);
      return out;
    },
    stream: 0,
    temporary: true,
  },
  {
    name: "MPEG-TS with B-frames",
    path: () => generateClip({ width: 64, height: 48, durationSec: 6, gop: 25, bframes: 2, container: "ts" }),
    stream: 0,
  },
];

for (const src of SOURCES) {
  Deno.test({
    name: `frameIndex = ffprobe's presentation index: ${src.name}, windows from one open and one by one`,
    ignore: !CLI || (src.name.startsWith("AV1") && lacksDecoder("av1")),
    fn: async () => {
      const path = await src.path();
      if (path === null) return;
      try {
        const order = await presentationOrder(path, src.stream);
        const whole = await demuxVideo(path, { streamIndex: src.stream });
        assert.equal(whole.firstFrameIndex, 0);
        const tb = whole.timeBase;
        const times = order.map((t) => t * (tb[0] / tb[1])).filter(Number.isFinite);
        const [first, last] = [Math.min(...times), Math.max(...times)];
        let frames = await check(whole, order, "whole stream");
        const windows = windowsOf(first, last, Math.min(0.6, (last - first) / 2));
        const together = await demuxVideo(path, { streamIndex: src.stream, windows });
        for (const [i, p] of together.entries()) {
          frames += await check(p, order, `window ${windows[i]} (one open)`);
        }
        for (const w of windows) {
          const p = await demuxVideo(path, { streamIndex: src.stream, window: w });
          frames += await check(p, order, `window ${w}`);
          frames += await check(p, order, `window ${w} at 7 fps`, 7, w[1]);
        }
        assert.ok(frames > 10, `${frames} frames checked`);
      } finally {
        if (src.temporary) await Deno.remove(path).catch(() => {});
      }
    },
  });
}

/** ffprobe's presentation index of the last keyframe presented at or before each time (where a window starts). */
async function keyframeIndices(path: string, at: number[]): Promise<number[]> {
  const frames = await ffprobeFrames(path, 0);
  return at.map((s) => frames.findLastIndex((f) => f.keyFrame && f.ptsTime! <= s));
}

Deno.test({
  name: "frameIndex: a window reached by a seek gets its index from the keyframe table, read once per file",
  ignore: !CLI,
  fn: async () => {
    const path = await generateClip({
      width: 64,
      height: 48,
      durationSec: 8,
      gop: 25,
      bframes: 2,
      container: "mkv",
    });
    const copy = await tempFile(".mkv");
    try {
      await Deno.copyFile(path, copy);
      const before = keyframeScans();
      const a = await demuxVideo(copy, { window: [5, 5.5] });
      assert.equal(keyframeScans(), before + 1, "the first seek reads the table");
      const b = await demuxVideo(copy, { windows: [[2, 2.4], [6, 6.4]] });
      assert.equal(keyframeScans(), before + 1, "then it is kept");
      const starts = [a, ...b].map((p) => p.firstFrameIndex);
      assert.deepEqual(starts, await keyframeIndices(copy, [5, 2, 6]));
      // Another file at the same path (its size changed): read again.
      const other = await generateClip({ width: 64, height: 48, durationSec: 9, gop: 30, container: "mkv" });
      await Deno.copyFile(other, copy);
      assert.deepEqual(
        [(await demuxVideo(copy, { window: [5, 5.5] })).firstFrameIndex],
        await keyframeIndices(copy, [5]),
      );
      assert.equal(keyframeScans(), before + 2);
      // Without the table (frameIndex: false) a window after a seek has no index; one read from the start has.
      const [start, later] = await demuxVideo(copy, { windows: [[0, 0.5], [6, 6.5]], frameIndex: false });
      assert.equal(start.firstFrameIndex, 0);
      assert.equal(later.firstFrameIndex, undefined);
      assert.equal((await decodeVideo(later, { width: 16, height: 16 })).frameIndex, null);
    } finally {
      await Deno.remove(copy).catch(() => {});
    }
  },
});

Deno.test({
  name: "frameIndex: a stream without timestamps (raw H.264) says it cannot tell (null), it does not guess",
  ignore: !CLI,
  fn: async () => {
    const raw = await tempFile(".h264");
    try {
      const r = await runCli("ffmpeg", [
        ...["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "1", "-c:v", "libx264"],
        ...["-bf", "2", "-g", "10", "-y", raw],
      ]);
      assert.equal(r.code, 0, r.stderr);
      const p = await demuxVideo(raw);
      assert.equal(p.firstFrameIndex, undefined);
      const f = await decodeVideo(p, { width: 16, height: 16 });
      assert.equal(f.pts.length, 25);
      assert.equal(f.frameIndex, null);
    } finally {
      await Deno.remove(raw).catch(() => {});
    }
  },
});
