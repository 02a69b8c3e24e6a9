/**
 * `deno bench` for the CPU decoder: decode + resize to 112×112 RGB24 of a generated 340×256 H.264 clip
 * (250 frames, B-frames). The baseline is the ffmpeg CLI doing the same work in the same run (its process
 * start-up included, amortised over 4 passes with `-stream_loop`); `bench/compare_decode.ts` adds PyAV and
 * Workers and prints ratios.
 * @module
 */
import { decodeVideo } from "../src/media/decode.ts";
import { demuxVideo } from "../src/media/demux.ts";
import { generateClip } from "../tests/helpers/media.ts";
import { runFfmpegBaseline } from "./fixtures/ffmpeg_baseline.ts";

const clip = await generateClip({ width: 340, height: 256, durationSec: 10, bframes: 2, gop: 25 });
const packets = await demuxVideo(clip);
const SIZE = { width: 112, height: 112 };
const PASSES = 4;

Deno.bench({
  name: "ffmpeg CLI -threads 1, 4 passes, scale=112:112:flags=bilinear rgb24",
  group: "decode 4×250 frames to 112x112",
  baseline: true,
  async fn() {
    await runFfmpegBaseline(clip, PASSES);
  },
});

Deno.bench({
  name: "sluice demuxVideo + decodeVideo, threads 1, 4 passes",
  group: "decode 4×250 frames to 112x112",
  async fn() {
    for (let i = 0; i < PASSES; i++) await decodeVideo(await demuxVideo(clip), SIZE);
  },
});

Deno.bench({
  name: "sluice decodeVideo only (packets in memory), 4 passes",
  group: "decode 4×250 frames to 112x112",
  async fn() {
    for (let i = 0; i < PASSES; i++) await decodeVideo(packets, SIZE);
  },
});

Deno.bench({
  name: "sluice decodeVideo, skipNonRef (B-frames skipped), 4 passes",
  group: "decode 4×250 frames to 112x112",
  async fn() {
    for (let i = 0; i < PASSES; i++) await decodeVideo(packets, { ...SIZE, skipNonRef: true });
  },
});
