/**
 * The clip Worker functions as the loader runs them (demuxClips → decodeClip): exactly `numFrames` frames or the
 * failure record of a ClipError naming the file, the window, the stage and the cause; held frames (a frame still on screen) and
 * padding (beyond the end of the stream) counted apart, padding bounded (and refused before anything is
 * allocated); one failed window never fails the other clips of its video; seeded transforms; a
 * caller's destination.
 */
import assert from "node:assert/strict";
import { decodeClip, demuxClips } from "../../src/loader/decode/clip_worker.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import { isFailedClip } from "../../src/loader/clip/clip_failure.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { generateClip, hasFfmpegCliSync, tempFile } from "../helpers/media.ts";
import type { ClipFailure, ClipPackets, DecodedClip, VideoTask } from "../../src/loader/clip/life.ts";

const CLI = hasFfmpegCliSync();
const ignore = !CLI;

function task(path: string, windows: [number, number][], spec: Partial<ClipSpec> = {}): VideoTask {
  return {
    epoch: 0,
    video: 0,
    path,
    clips: windows.map(([start, end], i) => clipBase(path, start, end, i, 1000 + i)),
    spec: testSpec({ numFrames: 8, width: 32, height: 24, ...spec }),
  };
}

/** What the loader does with one video: demux its clips, decode each on its own; failures kept per clip. */
function clips(t: VideoTask): (DecodedClip | ClipFailure)[] {
  const items = demuxClips(t).value as ClipPackets[];
  return items.map((item) => {
    const [c] = decodeClip(item).value;
    return isFailedClip(c) ? c.failed : c;
  });
}

/** Whether `c` is a failure record (not a clip). */
function isFailure(c: unknown): c is ClipFailure {
  return typeof c === "object" && c !== null && "errorName" in c;
}

type Meta = DecodedClip["meta"] & {
  pts: number[];
  held: number;
  padded: number;
  crop: number[];
  flipped: boolean;
};

Deno.test({
  name:
    "clip: exactly numFrames frames; a window past the end of the stream pads with the last frame, counted",
  ignore,
  fn: async () => {
    const path = await generateClip({ width: 64, height: 48, durationSec: 2, gop: 25 });
    const [a, b] = clips(task(path, [[0.5, 1.5], [1.84, 3]])) as DecodedClip[];
    assert.equal(a.data.length, 8 * 32 * 24 * 3);
    // The frame on screen at 0.5 (presented at 0.48), then those presented after.
    assert.deepEqual(a.outcome!.pts.map((x) => Math.round(x * 100) / 100), [
      0.48,
      0.52,
      0.56,
      0.6,
      0.64,
      0.68,
      0.72,
      0.76,
    ]);
    assert.deepEqual([a.outcome!.held, a.outcome!.padded], [0, 0]);
    // Frames 1.84 .. 1.96 exist (4) and the stream ends at 2 s, inside the window: padding 4 = maxPadFraction 0.5
    // exactly, allowed; nothing is held (no frame is on screen after 2 s).
    const m = b.outcome!;
    assert.deepEqual([m.held, m.padded], [0, 4]);
    assert.deepEqual(m.pts.map((x) => Math.round(x * 100) / 100), [
      1.84,
      1.88,
      1.92,
      1.96,
      1.96,
      1.96,
      1.96,
      1.96,
    ]);
    const frame = (k: number) => b.data.subarray(k * 32 * 24 * 3, (k + 1) * 32 * 24 * 3);
    for (let k = 4; k < 8; k++) assert.deepEqual(frame(k), frame(3), `padding frame ${k} repeats the last`);
  },
});

Deno.test({
  name:
    "clip: more padding than maxPadFraction fails before decoding or allocating (numFrames 10000 of 1080p: 62 GB)",
  ignore,
  fn: async () => {
    const path = await generateClip({ width: 64, height: 48, durationSec: 2, gop: 25 });
    // The stream ends at 2 s, inside the window: 1.48 (on screen at 1.5), then 1.52 .. 1.96.
    const [e] = clips(task(path, [[1.5, 2.5]], { numFrames: 10000, width: 1920, height: 1080 }));
    assert.ok(isFailure(e) && e.errorName === "ClipError", JSON.stringify(e));
    assert.equal(e.stage, "decode");
    assert.deepEqual([e.start, e.end], [1.5, 2.5]);
    assert.match(
      e.error,
      /clip \[1\.5, 2\.5\) s: decode failed: the window can give 13 frames at most of the 10000 asked and the stream ends inside it: 9987 frames of padding/,
    );
    // With padding allowed, the same request is honoured (small frames here).
    const [ok] = clips(task(path, [[1.5, 2.5]], { numFrames: 20, maxPadFraction: 1 })) as DecodedClip[];
    assert.deepEqual([ok.outcome!.held, ok.outcome!.padded], [0, 7]);
  },
});

Deno.test({
  name:
    "clip: a window the stream goes on past holds its last frame (held, not padding): maxPadFraction ignores it",
  ignore,
  fn: async () => {
    const path = await generateClip({ width: 64, height: 48, durationSec: 2, gop: 25 });
    // 1.48 (on screen at 1.5), then 1.52 .. 1.68: 6 frames for 12 slots; the frame at 1.68 is on screen until
    // 1.72, after the window's end: the 6 repeats are held. Before, they were padding, beyond maxPadFraction 0.
    const [c] = clips(task(path, [[1.5, 1.7]], { numFrames: 12, maxPadFraction: 0 })) as DecodedClip[];
    assert.ok(!isFailure(c), JSON.stringify(c));
    assert.deepEqual([c.outcome!.held, c.outcome!.padded], [6, 0]);
    assert.deepEqual(c.outcome!.pts.slice(5).map((x) => Math.round(x * 100) / 100), Array(7).fill(1.68));
  },
});

Deno.test({
  name:
    "clip: a screen capture with a 1.6 s gap: a window inside it shows the frame on screen (presented before)",
  ignore,
  fn: async () => {
    // 25 fps, frames between 1.04 s and 2.64 s dropped: variable frame rate with a gap; the frame at 1.0 s is on
    // screen from 1.0 to 2.64 s.
    const path = await generateClip({
      width: 64,
      height: 48,
      durationSec: 4,
      gop: 50,
      container: "mkv",
      extraArgs: ["-vf", "select='not(between(t,1.02,2.62))'", "-vsync", "vfr"],
    });
    const windows: [number, number][] = [[0.2, 0.6], [1.5, 2.5], [2.7, 3.2]];
    const size = 32 * 24 * 3;
    const [, rate] = clips(
      task(path, windows, { sampling: { kind: "rate", frameRate: 8 } }),
    ) as DecodedClip[];
    assert.deepEqual(rate.outcome!.pts, Array.from({ length: 8 }, (_, k) => 1.5 + k / 8));
    assert.equal(rate.outcome!.padded, 0);
    for (let k = 1; k < 8; k++) {
      assert.deepEqual(rate.data.subarray(k * size, (k + 1) * size), rate.data.subarray(0, size));
    }
    // Counting frames: one is on screen for the whole window, so the 7 other slots hold it: held frames, not
    // padding (nothing is missing), within the default maxPadFraction 0.5 (before, the clip failed).
    const out = clips(task(path, windows));
    assert.ok(!out.some(isFailure), JSON.stringify(out.find(isFailure)));
    const held = out[1] as DecodedClip;
    assert.deepEqual(held.outcome!.pts, Array(8).fill(1));
    assert.deepEqual([held.outcome!.held, held.outcome!.padded], [7, 0]);
    assert.deepEqual(held.data.subarray(0, size), rate.data.subarray(0, size), "the same frame on screen");
    for (let k = 1; k < 8; k++) {
      assert.deepEqual(held.data.subarray(k * size, (k + 1) * size), held.data.subarray(0, size));
    }
  },
});

Deno.test({
  name: "clip: a window past the end of a truncated file fails at demux; the video's other clips decode",
  ignore,
  fn: async () => {
    const src = await generateClip({ width: 64, height: 48, durationSec: 6, gop: 25, container: "ts" });
    const cut = await tempFile(".ts");
    try {
      const bytes = await Deno.readFile(src);
      await Deno.writeFile(cut, bytes.subarray(0, Math.floor(bytes.length * 0.45)));
      // MPEG-TS starts at 1.4 s (the muxer's delay).
      const out = clips(task(cut, [[1.9, 2.4], [6.6, 7.3], [2.4, 2.9]]));
      assert.ok(!isFailure(out[0]) && !isFailure(out[2]), JSON.stringify([out[0], out[2]]));
      const e = out[1];
      assert.ok(isFailure(e) && e.errorName === "ClipError", JSON.stringify(e));
      assert.equal(e.stage, "demux");
      assert.match(e.error, /clip \[6\.6, 7\.3\) s: demux failed: file ends at \d/);
    } finally {
      await Deno.remove(cut);
    }
  },
});

Deno.test({
  name: "clip: random crops and flips follow the clip's seed (same seed, same clip; each seed its own)",
  ignore,
  fn: async () => {
    const path = await generateClip({ width: 160, height: 90, durationSec: 2, gop: 25 });
    const spec = { resize: "random-resized-crop" as const, flipProbability: 0.5 };
    const a = clips(task(path, Array(12).fill([0.5, 1]), spec)) as DecodedClip[];
    const b = clips(task(path, Array(12).fill([0.5, 1]), spec)) as DecodedClip[];
    const key = (c: DecodedClip) => JSON.stringify([c.outcome!.crop, c.outcome!.flipped]);
    assert.deepEqual(a.map(key), b.map(key), "same seeds, same choices");
    for (let i = 0; i < a.length; i++) assert.deepEqual(a[i].data, b[i].data);
    assert.ok(new Set(a.map(key)).size >= 10, "different seeds, different crops");
    const flips = a.filter((c) => c.outcome!.flipped).length;
    assert.ok(flips > 0 && flips < 12, `flips ${flips} of 12`);
  },
});

Deno.test({
  name: "clip: float32 written straight into a caller's buffer at an offset = normalised uint8 clip",
  ignore,
  fn: async () => {
    const path = await generateClip({ width: 64, height: 48, durationSec: 2, gop: 25 });
    const base = task(path, [[0.3, 1]]);
    const [u8] = clips(base) as DecodedClip[];
    const mean: [number, number, number] = [0.485, 0.456, 0.406],
      std: [number, number, number] = [0.229, 0.224, 0.225];
    const f = task(path, [[0.3, 1]], { dtype: "float32", mean, std });
    const item = (demuxClips(f).value as ClipPackets[])[0];
    const n = 8 * 32 * 24 * 3, offset = 100;
    const buf = new Float32Array(offset + n + 50).fill(-7);
    item.dest = { data: buf, offset };
    const [got] = decodeClip(item).value as DecodedClip[];
    assert.equal(got.data.buffer, buf.buffer, "the clip is a view of the caller's buffer");
    assert.ok(
      buf.subarray(0, offset).every((x) => x === -7) && buf.subarray(offset + n).every((x) => x === -7),
    );
    for (let i = 0; i < n; i++) {
      const c = i % 3;
      // (v/255 − mean)/std as sluice defines it: v · 1/(255·std) + (−mean/std) in float64, then float32.
      const want = Math.fround(u8.data[i] * (1 / (255 * std[c])) + -mean[c] / std[c]);
      assert.ok(Math.abs(want - (u8.data[i] / 255 - mean[c]) / std[c]) < 1e-5);
      if (buf[offset + i] !== want) assert.fail(`sample ${i}: ${buf[offset + i]} != ${want}`);
    }
    // A destination too small for the clip is refused.
    const small = (demuxClips(f).value as ClipPackets[])[0];
    small.dest = { data: new Float32Array(n - 1), offset: 0 };
    assert.throws(() => decodeClip(small), InvalidArgumentError);
  },
});

Deno.test({
  name: "clip: short-side keeps the aspect (centre crop of the source), stretch squashes",
  ignore,
  fn: async () => {
    const path = await generateClip({ width: 160, height: 90, durationSec: 1, gop: 25 });
    const [s] = clips(
      task(path, [[0, 0.5]], { resize: "short-side", width: 32, height: 32 }),
    ) as DecodedClip[];
    // 160x90 covering 32x32: scale 32/90, region 90x90 centred: x = 35 → even 34.
    assert.deepEqual(s.outcome!.crop, [34, 0, 90, 90]);
    const [st] = clips(task(path, [[0, 0.5]], { resize: "stretch", width: 32, height: 32 })) as DecodedClip[];
    assert.deepEqual(st.outcome!.crop, [0, 0, 160, 90]);
    // Same frames as decodeVideo with that crop: one rule for the region.
    const ref = await decodeVideo(await demuxVideo(path, { window: [0, 0.5] }), {
      width: 32,
      height: 32,
      crop: { left: 34, top: 0, width: 90, height: 90 },
      numFrames: 8,
    });
    assert.deepEqual(s.data, ref.data);
  },
});
