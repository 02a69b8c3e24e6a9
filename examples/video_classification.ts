/**
 * The production shape of a video-classification data pipeline, spelled out stage by stage with sluice's building
 * blocks, feeding a simulated training loop:
 *
 * ```
 * sampling → fetch → disaggregate → demux → decode → aggregate → collate → train step
 * ```
 *
 * sampling plans each epoch up front (one task per video with its clip windows; `planLoader` makes the same plan
 * the loader uses); fetch reads URLs into memory (local files pass through); disaggregate splits a video into one
 * task per clip; demux cuts each clip's packets; decode turns them into resized RGB frames (CPU Workers or NVDEC);
 * aggregate + collate make `[B, T, H, W, 3]` batches. Each step is the loader's own (`clip_steps.ts`), which
 * passes a clip that fails on as a value; this example skips those. (`videoClassificationLoader` demuxes all clips
 * of a video in one open of the file, interleaves videos through a shuffle buffer, and replaces failed clips so
 * batches stay full; this example keeps the classic order.)
 *
 * The "training step" sleeps `--step-ms` (a GPU step leaves the CPU free). Per step it reports the step time and
 * how long the loop waited for data; at the end, samples/s and the data-wait fraction.
 *
 * ```
 * deno run -A examples/video_classification.ts [DATASET] [--subclip-duration 1] [--num-demux-threads 1]
 *   [--num-decode-threads N] [--batch-size 8] [--backend inprocess|subprocess] [--decoder cpu|nvdec|auto]
 *   [--frames 8] [--size 112] [--step-ms 20] [--steps 40] [--log-every 10]
 * ```
 * DATASET defaults to the demo dataset (made on first use). With `--backend subprocess`, sampling → fetch →
 * demux run in a child process (the loader's backend module) and this process decodes.
 *
 * The module also exports `tune`, the loader with its settings as a search space, for
 * `sluice tune examples/video_classification.ts [-- DATASET]` (see the README, "Tuning").
 * @module
 */

import { parseArgs } from "node:util";
import { PipelineBuilder } from "../src/pipeline/builder.ts";
import { WorkerPool } from "../src/pipeline/worker_pool.ts";
import { formatStats } from "../src/pipeline/format_stats.ts";
import { callingPool, decodeClipItem, demuxVideo, fetchVideo } from "../src/data/clip_steps.ts";
import { formatClipFailure, isFailedClip } from "../src/data/clip_failure.ts";
import { CLIP_WORKER, epochSource } from "../src/data/front.ts";
import type { VideoTask } from "../src/data/clip_worker.ts";
import { type Batch, collate } from "../src/data/collate.ts";
import { planLoader, videoClassificationLoader } from "../src/data/loader.ts";
import { selectDecoder } from "../src/nvdec/available.ts";
import { ensureDemoDataset } from "./demo.ts";
import { choice, int } from "../src/tune/space.ts";
import { defineTuning } from "../src/tune/target.ts";

/**
 * The tuning target of `sluice tune examples/video_classification.ts [-- DATASET]`: the loader over DATASET (the
 * demo dataset by default), 4 clips of 8 frames at 112×112 per video, 8 clips a batch, a 20 ms training step;
 * it starts where the production study started (demux concurrency 8, 2 s subclips).
 */
export const tune = defineTuning({
  space: {
    demuxConcurrency: int(1, 16, { stage: "demux" }),
    decodeConcurrency: int(1, 16, { stage: "decode" }),
    subclipSec: choice([0.5, 1, 2], { label: "subclip seconds" }),
    bufferSize: int(1, 8),
    backend: choice(["inprocess", "subprocess"]),
  },
  start: {
    demuxConcurrency: 8,
    decodeConcurrency: navigator.hardwareConcurrency ?? 1,
    subclipSec: 2,
    bufferSize: 3,
    backend: "inprocess",
  },
  create: (c, ctx) =>
    videoClassificationLoader({
      dataset: ctx.args[0] ?? ensureDemoDataset(),
      batchSize: 8,
      clip: { numFrames: 8, width: 112, height: 112 },
      sampler: { clipsPerVideo: 4, clipDurationSec: c.subclipSec },
      backend: c.backend,
      bufferSize: c.bufferSize,
      concurrency: { demux: c.demuxConcurrency, decode: c.decodeConcurrency },
    }),
  step: () => new Promise<void>((r) => setTimeout(r, 20)),
});

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    "subclip-duration": { type: "string", default: "1" },
    "num-demux-threads": { type: "string", default: "1" },
    "num-decode-threads": { type: "string", default: String(navigator.hardwareConcurrency ?? 1) },
    "batch-size": { type: "string", default: "8" },
    backend: { type: "string", default: "inprocess" },
    decoder: { type: "string", default: "cpu" },
    frames: { type: "string", default: "8" },
    size: { type: "string", default: "112" },
    "step-ms": { type: "string", default: "20" },
    steps: { type: "string", default: "40" },
    "log-every": { type: "string", default: "10" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(
    "usage: deno run -A examples/video_classification.ts [DATASET] [--subclip-duration 1] [--num-demux-threads 1]\n" +
      "  [--num-decode-threads N] [--batch-size 8] [--backend inprocess|subprocess] [--decoder cpu|nvdec|auto]\n" +
      "  [--frames 8] [--size 112] [--step-ms 20] [--steps 40] [--log-every 10]",
  );
  Deno.exit(0);
}

const batchSize = Number(values["batch-size"]), numFrames = Number(values.frames), size = Number(values.size);
const stepMs = Number(values["step-ms"]),
  steps = Number(values.steps),
  logEvery = Number(values["log-every"]);
const demuxThreads = Number(values["num-demux-threads"]),
  decodeThreads = Number(values["num-decode-threads"]);
const subclip = Number(values["subclip-duration"]);
const decoder = selectDecoder(values.decoder as "cpu" | "nvdec" | "auto");
const decodeExport = decoder === "nvdec" ? "decodeClipNvdec" : "decodeClip";
const datasetPath = positionals[0] ?? (import.meta.main ? ensureDemoDataset() : "");

/** The batches: the explicit pipeline in-process, or the loader with its subprocess backend. */
async function batches(): Promise<
  { it: AsyncIterable<Batch>; stats: () => string; close: () => Promise<void> }
> {
  if (values.backend === "subprocess") {
    const loader = await videoClassificationLoader({
      dataset: datasetPath,
      batchSize,
      clip: { numFrames, width: size, height: size },
      sampler: { clipsPerVideo: 4, clipDurationSec: subclip },
      backend: "subprocess",
      decode: decoder,
      concurrency: { demux: demuxThreads, decode: decodeThreads },
    });
    return { it: loader, stats: () => formatStats(loader.stats().pipeline), close: () => loader.close() };
  }
  // The loader's own plan (dataset, index, sampler, clip spec): the same epochs the loader would load.
  const plan = await planLoader({
    dataset: datasetPath,
    batchSize,
    clip: { numFrames, width: size, height: size },
    sampler: { clipsPerVideo: 4, clipDurationSec: subclip },
    concurrency: { demux: demuxThreads },
  });
  const demuxPool = new WorkerPool(CLIP_WORKER, { size: demuxThreads });
  const decodePool = new WorkerPool(CLIP_WORKER, { size: decodeThreads });
  const pipeline = new PipelineBuilder()
    .addSource(epochSource(plan.front), { name: "sampling", continuous: true })
    .pipe((task: VideoTask, ctx) => fetchVideo(task, plan.front.fetch, ctx.signal), {
      name: "fetch",
      concurrency: 8,
    })
    .pipe((task) =>
      Array.isArray(task) ? [task] : task.clips.map((clip, i) => ({
        ...task,
        clips: [clip],
        // each clip task moves to a demux Worker on its own, so in-memory bytes are copied for all but one
        src: task.src instanceof Uint8Array && i > 0 ? task.src.slice() : task.src,
      })), { name: "split" })
    .disaggregate({ name: "disaggregate" })
    .pipe((task, ctx) => demuxVideo(demuxPool, task, ctx.signal), {
      name: "demux",
      executor: callingPool(demuxPool),
      concurrency: demuxThreads,
    })
    .disaggregate({ name: "clips" })
    .pipe((item, ctx) => decodeClipItem(decodePool, decodeExport, item, ctx.signal), {
      name: "decode",
      executor: callingPool(decodePool),
      concurrency: decodeThreads,
    })
    .pipe((clip) => {
      if (!isFailedClip(clip)) return clip;
      console.error(`skipped ${formatClipFailure(clip.failed)}`); // the loader would replace it
      return undefined;
    }, { name: "keep" })
    .aggregate(batchSize, { name: "aggregate" })
    .pipe((clips) => collate(clips, numFrames, "BTHWC"), { name: "collate" })
    .build();
  return { it: pipeline, stats: () => formatStats(pipeline.stats()), close: () => pipeline.stop() };
}

if (import.meta.main) { // `sluice tune` imports this module for `tune` only
  const source = await batches();
  let step = 0, samples = 0, waitMs = 0, stepTotalMs = 0;
  const t0 = performance.now();
  let last = t0;
  outer: while (step < steps) {
    for await (using batch of source.it) {
      const arrived = performance.now();
      const wait = arrived - last;
      await new Promise((r) => setTimeout(r, stepMs)); // the simulated training step
      const end = performance.now();
      step++;
      samples += batch.labels.length;
      waitMs += wait;
      stepTotalMs += end - last;
      if (step % logEvery === 0 || step === 1) {
        console.log(
          `step ${String(step).padStart(4)}  step time ${(end - last).toFixed(1)} ms  data wait ${
            wait.toFixed(1)
          } ms ` +
            `(${((wait / (end - last)) * 100).toFixed(0)}%)  labels [${[...batch.labels].join(",")}]`,
        );
      }
      last = end;
      if (step >= steps) break outer;
    }
  }
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `\n${steps} steps, ${samples} samples in ${secs.toFixed(2)} s: ${
      (samples / secs).toFixed(1)
    } samples/s, ` +
      `mean step ${(stepTotalMs / steps).toFixed(1)} ms, data-wait fraction ${
        (waitMs / stepTotalMs).toFixed(3)
      }`,
  );
  console.log(source.stats());
  await source.close();
}
