/**
 * The production shape of a video-classification data pipeline, spelled out stage by stage with sluice's building
 * blocks, feeding a simulated training loop:
 *
 * ```
 * sampling → fetch → disaggregate → demux → decode → aggregate → collate → train step
 * ```
 *
 * sampling plans each epoch up front (one task per video with its clip windows); fetch reads URLs into memory
 * (local files pass through); disaggregate splits a video into one task per clip; demux cuts each clip's packets;
 * decode turns them into resized RGB frames (CPU Workers or NVDEC); aggregate + collate make `[B, T, H, W, 3]`
 * batches. (`videoClassificationLoader` builds the same pipeline but demuxes all clips of a video in one open of
 * the file, before disaggregating; this example keeps the classic order.)
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
 * @module
 */

import { parseArgs } from "node:util";
import { PipelineBuilder } from "../src/pipeline/builder.ts";
import { WorkerPool } from "../src/pipeline/worker_pool.ts";
import { formatStats } from "../src/pipeline/format_stats.ts";
import { openDataset } from "../src/data/dataset.ts";
import { fetchBytes, isUrl } from "../src/data/fetch.ts";
import { indexDataset } from "../src/data/video_index.ts";
import { ClipSampler } from "../src/data/sampler.ts";
import { CLIP_WORKER, epochSource, type FrontArgs } from "../src/data/front.ts";
import type { ClipPackets, VideoTask } from "../src/data/clip_worker.ts";
import { clipSpec } from "../src/data/clip_spec.ts";
import { type Batch, collate, type DecodedClip } from "../src/data/collate.ts";
import { videoClassificationLoader } from "../src/data/loader.ts";
import { selectDecoder } from "../src/nvdec/available.ts";
import { ensureDemoDataset } from "./demo.ts";

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
const datasetPath = positionals[0] ?? ensureDemoDataset();

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
  const dataset = await openDataset(datasetPath);
  const index = await indexDataset(dataset);
  const kept = index.videos.flatMap((v, i) => v === null ? [] : [i]);
  const ranges = kept.map((i) => ({ start: index.videos[i]!.start, end: index.videos[i]!.end }));
  const sampler = new ClipSampler(ranges, { clipsPerVideo: 4, clipDurationSec: subclip });
  const args: FrontArgs = {
    items: kept.map((i) => dataset.items[i]),
    ranges,
    datasetIndex: kept,
    sampler: { ...sampler.options },
    firstEpoch: 0,
    spec: clipSpec({ numFrames, width: size, height: size }),
    concurrency: { fetch: 8, demux: demuxThreads },
    fetch: {},
  };
  const demuxPool = new WorkerPool(CLIP_WORKER, { size: demuxThreads });
  const decodePool = new WorkerPool(CLIP_WORKER, { size: decodeThreads });
  const pipeline = new PipelineBuilder()
    .addSource(epochSource(args), { name: "sampling", continuous: true })
    .pipe(async (task: VideoTask): Promise<VideoTask> => {
      task.src = isUrl(task.path) ? await fetchBytes(task.path) : task.path;
      return task;
    }, { name: "fetch", concurrency: 8 })
    .pipe((task: VideoTask): VideoTask[] =>
      task.clips.map((clip, i) => ({
        ...task,
        clips: [clip],
        // each clip task moves to a demux Worker on its own, so in-memory bytes are copied for all but one
        src: task.src instanceof Uint8Array && i > 0 ? task.src.slice() : task.src,
      })), { name: "split" })
    .disaggregate({ name: "disaggregate" })
    .pipe<ClipPackets[]>("demuxClips", { name: "demux", executor: demuxPool })
    .disaggregate({ name: "clips" })
    .pipe<DecodedClip>(decoder === "nvdec" ? "decodeClipNvdec" : "decodeClip", {
      name: "decode",
      executor: decodePool,
    })
    .aggregate(batchSize, { name: "aggregate" })
    .pipe((clips: DecodedClip[]) => collate(clips, numFrames, "BTHWC"), { name: "collate" })
    .build();
  return { it: pipeline, stats: () => formatStats(pipeline.stats()), close: () => pipeline.stop() };
}

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
  `\n${steps} steps, ${samples} samples in ${secs.toFixed(2)} s: ${(samples / secs).toFixed(1)} samples/s, ` +
    `mean step ${(stepTotalMs / steps).toFixed(1)} ms, data-wait fraction ${
      (waitMs / stepTotalMs).toFixed(3)
    }`,
);
console.log(source.stats());
await source.close();
