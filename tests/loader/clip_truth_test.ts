/**
 * Clip truth (issue 11's acceptance): 200 seeded clips across MP4, MKV, WebM, MPEG-TS, MOV and AVI; H.264 with
 * B-frames, HEVC, VP9, AV1 and MPEG-4; every sampling kind (with and without resampling), rotation, every resize
 * mode, flips, uint8 and float32, packed and planar. Each clip goes through exactly what the loader runs
 * (`demuxClips` → `decodeClip`, with the CPU and with NVDEC against the double) and is compared with the ffmpeg CLI:
 *
 * - pixels: the CLI decodes the whole file through the same filters, `crop` (the clip's region, coded
 *   coordinates), `scale=W:H:flags=<interpolation>`, the turn (`transpose`), `hflip`, every frame kept
 *   (`-vsync passthrough`, `-noautorotate`): byte-identical on the CPU (float32: the CLI's bytes through
 *   `(v/255 - mean)/std`). NVDEC: the double scales with bicubic where the CPU uses the clip's interpolation, and
 *   converts NV12 → RGB with the PTX kernel; its oracle is the same chain with `flags=bicubic`, ≥ 40 dB.
 * - frames: which CLI frames fill the slots is decided from ffprobe's frame times by the rule stated in
 *   `frame_select.ts`, written out plainly here (a loop per slot, not the selector's state machine).
 * - regions: each resize mode's region is checked against its definition (centre, size, aspect, area range).
 *
 * Figures (byte-identical count, worst PSNR) are printed for the closing note.
 */
import assert from "node:assert/strict";
import { demuxClips } from "../../src/loader/decode/clip_worker.ts";
import { decodeAlone } from "./decode_alone.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import type { ClipPackets, VideoTask } from "../../src/loader/clip/life.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import { mulberry32 } from "../../src/dataset/random.ts";
import { orientedSize } from "../../src/media/orient.ts";
import { releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { probeFrameTimes, psnr } from "../helpers/decode_oracles.ts";
import { asClipFrame, bytesOf, cliFrames, expectedFrames, packedToPlanar } from "../helpers/clip_oracle.ts";
import {
  type ClipSpec as MediaSpec,
  generateClip,
  hasFfmpegCliSync,
  lacksDecoder,
  runCli,
} from "../helpers/media.ts";
import { useDouble } from "../nvdec/nvdec_helpers.ts";

/** The first sample where `got` is not `ref` (float32: `ref` rounded to float32), or -1. */
function firstDifference(got: ArrayLike<number>, ref: ArrayLike<number>, float32: boolean): number {
  for (let i = 0; i < got.length; i++) {
    if (got[i] !== (float32 ? Math.fround(ref[i]) : ref[i])) return i;
  }
  return -1;
}

const CLI = hasFfmpegCliSync();
const NVDEC_PSNR_DB = 40;

interface Source {
  name: string;
  media: MediaSpec;
  /** `-metadata:s:v:0 rotate=` tag written on a copy (a phone clip's display matrix). */
  rotateTag?: number;
  nvdec: boolean;
}

const base = { width: 160, height: 90, fps: 25, durationSec: 1.6 };
const SOURCES: Source[] = [
  { name: "H.264 B-frames MP4", media: { ...base, bframes: 2, gop: 25 }, nvdec: true },
  { name: "H.264 B-frames MKV", media: { ...base, container: "mkv", bframes: 3, gop: 40 }, nvdec: true },
  { name: "H.264 MPEG-TS", media: { ...base, container: "ts", bframes: 2, gop: 30 }, nvdec: true },
  {
    name: "H.264 MOV rotated",
    media: { ...base, container: "mov", bframes: 2, gop: 25 },
    rotateTag: 90,
    nvdec: true,
  },
  {
    name: "HEVC MKV",
    media: { ...base, codec: "libx265", container: "mkv", bframes: 2, gop: 25 },
    nvdec: true,
  },
  { name: "VP9 WebM", media: { ...base, codec: "libvpx-vp9", container: "webm", gop: 25 }, nvdec: true },
  {
    name: "AV1 MP4",
    media: {
      ...base,
      codec: "libaom-av1",
      gop: 25,
      durationSec: 1.6,
      extraArgs: ["-cpu-used", "8", "-row-mt", "1"],
    },
    nvdec: true,
  },
  {
    name: "MPEG-4 AVI",
    media: { ...base, fps: 30, codec: "mpeg4", container: "avi", gop: 15 },
    nvdec: false,
  },
];
const CLIPS_PER_SOURCE = 25; // 8 sources: 200 clips

async function sourcePath(s: Source): Promise<string> {
  const path = await generateClip(s.media);
  if (s.rotateTag === undefined) return path;
  const out = path.replace(/\.(\w+)$/, `.rot${s.rotateTag}.$1`);
  try {
    await Deno.stat(out);
  } catch {
    const tmp = `${out}.${crypto.randomUUID()}.mov`;
    const r = await runCli("ffmpeg", [
      "-v",
      "error",
      "-i",
      path,
      "-c",
      "copy",
      "-metadata:s:v:0",
      `rotate=${s.rotateTag}`,
      "-y",
      tmp,
    ]);
    assert.equal(r.code, 0, r.stderr);
    await Deno.rename(tmp, out);
  }
  return out;
}

/** A seeded clip request: window, sampling, transforms. */
function request(
  next: () => number,
  first: number,
  last: number,
): { window: [number, number]; spec: ClipSpec } {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
  const numFrames = 8;
  const kind = pick(["consecutive", "rate", "uniform", "stride"] as const);
  let sampling: ClipSpec["sampling"], len: number;
  switch (kind) {
    case "consecutive":
      [sampling, len] = [{ kind }, 0.2 + next() * 0.5];
      break;
    case "stride":
      [sampling, len] = [{ kind, stride: pick([2, 3]) }, 0.4 + next() * 0.8];
      break;
    case "rate": {
      const frameRate = pick([6, 10, 12.5, 15, 30]);
      [sampling, len] = [{ kind, frameRate }, Math.min(numFrames / frameRate, 0.3 + next())];
      break;
    }
    case "uniform":
      [sampling, len] = [{ kind }, pick([0.4, 0.8, 1])];
      break;
  }
  // Windows end inside the stream (grid slots then run to the window's end); some start before its first frame.
  const start = first - 0.05 + next() * Math.max(0.01, last - len - first + 0.05);
  const spec = testSpec({
    numFrames,
    width: pick([32, 48]),
    height: 32,
    sampling,
    resize: pick(["stretch", "short-side", "random-crop", "random-resized-crop"] as const),
    flipProbability: 0.5,
    interpolation: pick(["bilinear", "bilinear", "bicubic", "area"] as const),
    planar: next() < 0.5,
    dtype: next() < 0.3 ? "float32" : "uint8",
    mean: [0.485, 0.456, 0.406],
    std: [0.229, 0.224, 0.225],
    rotate: next() < 0.8,
    maxPadFraction: 1,
  });
  return { window: [start, Math.min(start + len, last)], spec };
}

/** Checks a region against its resize mode's definition. */
function assertRegion(spec: ClipSpec, crop: number[], [dw, dh]: [number, number], what: string): void {
  const [x, y, w, h] = crop;
  assert.ok(
    x >= 0 && y >= 0 && x + w <= dw && y + h <= dh && x % 2 === 0 && y % 2 === 0,
    `${what}: inside, even`,
  );
  const aspect = spec.width / spec.height;
  switch (spec.resize) {
    case "stretch":
      assert.deepEqual(crop, [0, 0, dw, dh], what);
      break;
    case "short-side":
    case "random-crop": {
      const f = Math.max(spec.width / dw, spec.height / dh);
      assert.ok(
        Math.abs(w - spec.width / f) <= 2 && Math.abs(h - spec.height / f) <= 2,
        `${what}: covering size`,
      );
      assert.ok(Math.abs(w / h - aspect) < 0.1, `${what}: aspect kept`);
      if (spec.resize === "short-side") {
        assert.ok(
          Math.abs(x + w / 2 - dw / 2) <= 1.5 && Math.abs(y + h / 2 - dh / 2) <= 1.5,
          `${what}: centred`,
        );
      }
      break;
    }
    case "random-resized-crop": {
      const area = (w * h) / (dw * dh);
      const fallback = w === dw || h === dh;
      assert.ok(
        fallback || (area >= spec.scale[0] - 0.05 && area <= spec.scale[1] + 0.01),
        `${what}: area ${area}`,
      );
      break;
    }
  }
}

Deno.test({
  name:
    "clip truth: 200 seeded clips = the ffmpeg CLI's frames for the same time range and filters (CPU, NVDEC)",
  ignore: !CLI,
  fn: async () => {
    const dbl = await useDouble();
    dbl.configure();
    let checkedSources = 0;
    const stats = {
      cpu: 0,
      identical: 0,
      nvdec: 0,
      worstNvdec: Infinity,
      padded: 0,
      held: 0,
      indexed: 0,
      unindexed: new Set<string>(),
      kinds: new Map<string, number>(),
    };
    try {
      for (const [si, src] of SOURCES.entries()) {
        if (src.name.startsWith("AV1") && lacksDecoder("av1")) continue;
        checkedSources++;
        const path = await sourcePath(src);
        const times = await probeFrameTimes(path, 0);
        const finite = times.filter((t) => Number.isFinite(t));
        const first = Math.min(...finite), last = Math.max(...finite);
        const next = mulberry32(1000 + si);
        const reqs = Array.from({ length: CLIPS_PER_SOURCE }, () => request(next, first, last));
        // sluice first (synchronous FFI on this thread), then the CLI oracles, three at a time.
        const checks: (() => Promise<void>)[] = [];
        for (const [ci, { window, spec }] of reqs.entries()) {
          const task: VideoTask = {
            epoch: 0,
            video: si,
            path,
            clips: [clipBase(path, window[0], window[1], ci, 7919 * si + ci)],
            spec,
          };
          const what = `${src.name} clip ${ci} [${window[0].toFixed(3)}, ${window[1].toFixed(3)}) ` +
            `${JSON.stringify(spec.sampling)} ${spec.resize} ${spec.interpolation} ${spec.dtype}` +
            `${spec.planar ? " planar" : ""}${spec.rotate ? "" : " rotate:false"}`;
          const [item] = demuxClips(task).value as ClipPackets[];
          const packets = item.packets!;
          const rotation = packets.rotation;
          const coded: [number, number] = [packets.width, packets.height];
          const cpu = decodeAlone(structuredClone(item));
          const meta = cpu.outcome!;
          const want = expectedFrames(times, window, spec);
          assert.equal(spec.numFrames - meta.padded - meta.held, want.length, `${what}: frames filled`);
          // Each slot's frameIndex is the frame's index in ffprobe's list (presentation order), repeats included.
          if (meta.frameIndex === null) stats.unindexed.add(src.name);
          else {
            const last = want[want.length - 1];
            const full = [...want, ...Array(spec.numFrames - want.length).fill(last)];
            assert.deepEqual(meta.frameIndex, full, `${what}: frameIndex`);
            stats.indexed++;
          }
          assert.equal(meta.rotated, spec.rotate && rotation !== 0, `${what}: rotated`);
          assertRegion(spec, meta.crop, orientedSize(coded[0], coded[1], meta.rotated ? rotation : 0), what);
          stats.cpu++;
          stats.padded += meta.padded;
          stats.held += meta.held;
          stats.kinds.set(spec.sampling.kind, (stats.kinds.get(spec.sampling.kind) ?? 0) + 1);
          const gpu = src.nvdec ? decodeAlone(item, "nvdec") : null;
          if (gpu) {
            const gm = gpu.outcome!;
            assert.deepEqual(
              [gm.pts, gm.frameIndex, gm.frameKind, gm.held, gm.padded, gm.crop],
              [meta.pts, meta.frameIndex, meta.frameKind, meta.held, meta.padded, meta.crop],
              `${what}: NVDEC slots`,
            );
          }
          const frameLen = 3 * spec.width * spec.height;
          const upTo = Math.max(...want) + 1;
          checks.push(async () => {
            const cli = await cliFrames(
              path,
              spec,
              cpu.outcome!,
              rotation,
              coded,
              spec.interpolation,
              spec.planar,
              upTo,
            );
            assert.equal(cli.length, upTo * frameLen, `${what}: CLI frames`);
            for (let k = 0; k < spec.numFrames; k++) {
              const src = want[Math.min(k, want.length - 1)];
              const ref = asClipFrame(cli.subarray(src * frameLen, (src + 1) * frameLen), spec);
              const got = cpu.data.subarray(k * frameLen, (k + 1) * frameLen);
              const bad = firstDifference(got, ref, spec.dtype === "float32");
              if (bad < 0) continue;
              if (spec.dtype === "float32") {
                assert.fail(`${what}: slot ${k} sample ${bad}: ${got[bad]} != ${ref[bad]}`);
              }
              const db = psnr(got as Uint8Array, ref as Uint8Array);
              assert.fail(`${what}: slot ${k} (frame ${src}) differs from the CLI's: ${db.toFixed(1)} dB`);
            }
            stats.identical++;
            if (gpu === null) return;
            // The double resizes in YUV with bicubic, then the kernel converts (like swscale's yuv → rgb24, it
            // shares chroma between pixel pairs): compare with packed RGB24 through the same chain.
            const packed = await cliFrames(path, spec, gpu.outcome!, rotation, coded, "nvdec", false, upTo);
            const cliNv = spec.planar ? packedToPlanar(packed, spec.width * spec.height) : packed;
            const ref = new Uint8Array(spec.numFrames * frameLen);
            for (let k = 0; k < spec.numFrames; k++) {
              const src = want[Math.min(k, want.length - 1)];
              const frame = asClipFrame(cliNv.subarray(src * frameLen, (src + 1) * frameLen), spec);
              ref.set(bytesOf(frame, spec), k * frameLen);
            }
            const db = psnr(bytesOf(gpu.data, spec), ref);
            stats.nvdec++;
            stats.worstNvdec = Math.min(stats.worstNvdec, db);
            assert.ok(
              db >= NVDEC_PSNR_DB,
              `${what}: NVDEC ${db.toFixed(1)} dB against the CLI (bicubic in YUV)`,
            );
          });
        }
        for (let i = 0; i < checks.length; i += 3) await Promise.all(checks.slice(i, i + 3).map((f) => f()));
      }
    } finally {
      releaseDecoderNvdec();
    }
    console.log(
      `clip truth: ${stats.cpu} CPU clips, ${stats.identical} byte-identical to the CLI (float32: exact after ` +
        `normalisation), ${stats.padded} frames of padding, ${stats.held} held; ${stats.indexed} with frameIndex (none: ${[
          ...stats.unindexed,
        ]}); ${stats.nvdec} NVDEC clips, same slots, worst ` +
        `${stats.worstNvdec.toFixed(1)} dB; sampling ${JSON.stringify(Object.fromEntries(stats.kinds))}`,
    );
    assert.equal(stats.cpu, CLIPS_PER_SOURCE * checkedSources);
    assert.deepEqual([...stats.unindexed], [], "every container here has the timestamps frameIndex needs");
  },
});
