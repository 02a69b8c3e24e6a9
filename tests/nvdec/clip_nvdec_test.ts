/**
 * One frame selector for both decoders: `decodeClip` with NVDEC (against the double) fills every clip's positions
 * with the same frames as with the CPU, for resampling 25 → 12.5, 30 → 8 and 30000/1001 → 10 fps, and on a
 * variable-frame-rate file with every sampling kind, over random windows and windows inside long gaps (the frame
 * on screen, presented before the window, in an earlier GOP): same position times, same padding, and
 * at native size (no resize: the double's scaler is bicubic, the CPU's bilinear; resize_test.ts bounds that) the
 * same pixels up to the NV12 → RGB conversion (the PTX kernel vs libswscale).
 */
import assert from "node:assert/strict";
import { demuxClips } from "../../src/loader/decode/clip_worker.ts";
import { decodeAlone } from "../loader/decode_alone.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import { releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { mulberry32 } from "../../src/dataset/random.ts";
import { generateClip, hasFfmpegCliSync, runCli, tempFile, vfrClipSpec } from "../helpers/media.ts";
import { framesOnScreen, probeFrameTimes } from "../helpers/decode_oracles.ts";
import { psnr, useDouble } from "./nvdec_helpers.ts";
import type { ClipPackets, DecodedClip, VideoTask } from "../../src/loader/clip/life.ts";

const ignore = !hasFfmpegCliSync();

/**
 * NV12 → RGB by the PTX kernel against libswscale on testsrc2's saturated edges (see loader_nvdec_test.ts: the
 * kernel's chroma upsampling differs at hard edges); a frame of the neighbouring slot falls far below.
 */
const NATIVE_PSNR_DB = 35;

type Meta = { pts: number[]; padded: number };

/** Every sampling kind. */
const KINDS: ClipSpec["sampling"][] = [
  { kind: "consecutive" },
  { kind: "stride", stride: 2 },
  { kind: "rate", frameRate: 10 },
  { kind: "uniform" },
];

function bothDecoders(
  path: string,
  spec: Partial<ClipSpec>,
  seed: number,
  count: number,
  dur: number,
  fps = 25,
) {
  const next = mulberry32(seed);
  const clips = Array.from({ length: count }, (_, i) => {
    // Half the windows start on a frame's time, where frames fall on half positions (25 -> 12.5 fps) and a rounding
    // that is not FFmpeg's (Math.round of an inexact product) picked other frames.
    const start = i % 2 ? Math.floor(next() * (dur - 0.3) * fps) / fps : next() * (dur - 0.3);
    return clipBase(path, start, start + 0.3 + next() * 1.2, i, i);
  });
  const task: VideoTask = {
    epoch: 0,
    video: 0,
    path,
    clips,
    spec: testSpec({ numFrames: 8, width: 128, height: 96, maxPadFraction: 1, ...spec }),
  };
  const cpu: DecodedClip[] = [], gpu: DecodedClip[] = [];
  for (const item of demuxClips(task).value as ClipPackets[]) {
    cpu.push(decodeAlone(structuredClone(item)));
  }
  for (const item of demuxClips(task).value as ClipPackets[]) gpu.push(decodeAlone(item, "nvdec"));
  let worst = Infinity;
  for (let i = 0; i < cpu.length; i++) {
    const [c, g] = [cpu[i].outcome!, gpu[i].outcome!];
    assert.deepEqual(g.pts, c.pts, `clip ${i} [${clips[i].start}, ${clips[i].end}): positions`);
    assert.deepEqual([g.held, g.padded], [c.held, c.padded]);
    assert.deepEqual([g.frameIndex, g.frameKind], [c.frameIndex, c.frameKind], `clip ${i}: frame identity`);
    worst = Math.min(worst, psnr(gpu[i].data as Uint8Array, cpu[i].data as Uint8Array));
  }
  return worst;
}

for (const [fps, rate] of [[25, 12.5], [30, 8], [30000 / 1001, 10]]) {
  Deno.test({
    name: `nvdec clips: resampling ${fps.toFixed(3)} -> ${rate} fps fills the same positions as the CPU`,
    ignore,
    fn: async () => {
      const dbl = await useDouble();
      dbl.configure();
      const path = await generateClip({ width: 128, height: 96, fps, durationSec: 4, bframes: 2, gop: 30 });
      try {
        const worst = bothDecoders(
          path,
          { sampling: { kind: "rate", frameRate: rate } },
          7,
          40,
          4,
          fps,
        );
        console.log(`${fps} -> ${rate}: worst PSNR ${worst.toFixed(1)} dB`);
        assert.ok(worst >= NATIVE_PSNR_DB, `PSNR ${worst}`);
      } finally {
        releaseDecoderNvdec();
      }
    },
  });
}

Deno.test({
  name: "nvdec clips: a variable-frame-rate file, every sampling kind: same positions as the CPU",
  ignore,
  fn: async () => {
    const dbl = await useDouble();
    dbl.configure();
    // Every third frame dropped and a 0.7 s gap: irregular frame times.
    const path = await generateClip({
      width: 128,
      height: 96,
      durationSec: 4,
      gop: 40,
      container: "mkv",
      extraArgs: ["-vf", "select='not(eq(mod(n\\,3)\\,1))*not(between(t\\,2\\,2.7))'", "-vsync", "vfr"],
    });
    try {
      for (const [i, sampling] of KINDS.entries()) {
        const worst = bothDecoders(path, { sampling }, 20 + i, 12, 4);
        assert.ok(worst >= NATIVE_PSNR_DB, `${sampling.kind}: PSNR ${worst}`);
      }
    } finally {
      releaseDecoderNvdec();
    }
  },
});

Deno.test({
  name: "nvdec clips: windows inside 2.5 s gaps of a VFR recording show the frame on screen, as on the CPU",
  ignore,
  fn: async () => {
    const dbl = await useDouble();
    dbl.configure();
    // Frames in [0, 1.0], [3.52, 4.0], [6.52, 7.96]; keyframes right after the gaps: a window inside a gap shows
    // a frame of the GOP before its start.
    const spec = vfrClipSpec({
      gaps: [[1.02, 3.5], [4.02, 6.5]],
      keyframes: [0, 3.52, 6.52],
      width: 128,
      height: 96,
    });
    const windows: [number, number][] = [[1.5, 2.5], [3.0, 3.7], [4.5, 6.0], [6.1, 6.6], [2.0, 3.4]];
    try {
      for (const container of ["mp4", "mkv"]) {
        const path = await generateClip({ ...spec, container });
        const times = await probeFrameTimes(path, 0);
        for (const sampling of KINDS) {
          const task: VideoTask = {
            epoch: 0,
            video: 0,
            path,
            clips: windows.map(([s, e], i) => clipBase(path, s, e, i, i)),
            spec: testSpec({ numFrames: 8, width: 128, height: 96, maxPadFraction: 1, sampling }),
          };
          const cpu = (demuxClips(task).value as ClipPackets[]).map((item) => decodeAlone(item));
          const gpu = (demuxClips(task).value as ClipPackets[]).map((item) => decodeAlone(item, "nvdec"));
          for (const [i, [s, e]] of windows.entries()) {
            const what = `${container} ${sampling.kind} [${s}, ${e})`;
            const [c, g] = [cpu[i].outcome!, gpu[i].outcome!];
            if (sampling.kind === "consecutive") {
              // The frames on screen (ffprobe), then the last one held (the stream goes on past each window).
              const want = framesOnScreen(times, [s, e]).slice(0, 8).map((j) => times[j].toFixed(4));
              assert.deepEqual(c.pts.slice(0, want.length).map((t) => t.toFixed(4)), want, what);
              assert.deepEqual([c.held, c.padded], [8 - want.length, 0], what);
              const shown = framesOnScreen(times, [s, e]).slice(0, 8);
              assert.deepEqual(c.frameIndex?.slice(0, shown.length), shown, `${what}: ffprobe's indices`);
            }
            assert.deepEqual(g.pts, c.pts, `${what}: NVDEC positions`);
            assert.deepEqual([g.held, g.padded], [c.held, c.padded], what);
            assert.ok(c.frameIndex !== null, `${what}: frameIndex`);
            assert.deepEqual(
              [g.frameIndex, g.frameKind],
              [c.frameIndex, c.frameKind],
              `${what}: frame identity`,
            );
            const db = psnr(gpu[i].data as Uint8Array, cpu[i].data as Uint8Array);
            assert.ok(db >= NATIVE_PSNR_DB, `${what}: PSNR ${db}`);
          }
        }
      }
    } finally {
      releaseDecoderNvdec();
    }
  },
});

Deno.test({
  name: "nvdec clips: rotation, short-side crop, flip and float32 on the GPU = the CPU's (native size)",
  ignore,
  fn: async () => {
    const dbl = await useDouble();
    dbl.configure();
    const src = await generateClip({ width: 128, height: 96, durationSec: 2, bframes: 2, gop: 25 });
    const path = await tempFile(".mp4");
    const r = await runCli("ffmpeg", [
      "-v",
      "error",
      "-i",
      src,
      "-c",
      "copy",
      "-metadata:s:v:0",
      "rotate=90",
      "-y",
      path,
    ]);
    assert.equal(r.code, 0, r.stderr);
    // Displayed 96x128; a 96x96 region at native size (no resize on either side): the comparison isolates the
    // region, the turn, the flip and the conversions.
    const base = { numFrames: 6, width: 96, height: 96, resize: "short-side" as const, flipProbability: 1 };
    try {
      for (
        const spec of [
          testSpec(base), // packed: swscale's yuv→gbrp path upsamples chroma unlike its yuv→rgb24 path and the kernel
          testSpec({ ...base, dtype: "float32", std: [0.5, 0.5, 0.5] }),
        ]
      ) {
        const task: VideoTask = {
          epoch: 0,
          video: 0,
          path,
          clips: [clipBase(path, 0.3, 1, 0, 1)],
          spec,
        };
        const [c] = (demuxClips(task).value as ClipPackets[]).map((x) => decodeAlone(x));
        const [item] = demuxClips(task).value as ClipPackets[];
        const g = decodeAlone(item, "nvdec");
        const { decodedFrames: _a, ...gm } = g.outcome!;
        const { decodedFrames: _b, ...cm } = c.outcome!;
        assert.deepEqual(gm, cm);
        assert.deepEqual(g.meta, c.meta);
        assert.equal(cm.rotated, true);
        const bytes = (x: DecodedClip) =>
          x.data instanceof Float32Array
            ? Uint8Array.from(x.data, (v) => Math.round((v * 0.5) * 255))
            : x.data;
        const db = psnr(bytes(g), bytes(c));
        console.log(
          `nvdec vs cpu, ${spec.dtype} turned + short-side + flip at native size: ${db.toFixed(1)} dB`,
        );
        assert.ok(db >= NATIVE_PSNR_DB, `PSNR ${db}`);
      }
    } finally {
      releaseDecoderNvdec();
      await Deno.remove(path).catch(() => {});
    }
  },
});
