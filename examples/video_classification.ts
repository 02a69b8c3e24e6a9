/**
 * The shape of a video-classification data pipeline spelled out stage by stage with sluice's public building
 * blocks, feeding a simulated training loop:
 *
 * ```
 * sampling → fetch → demux → decode → (skip short clips) → aggregate → stack → train step
 * ```
 *
 * sampling plans each epoch up front (`planLoader` makes the plan the loader itself would use: the dataset, its
 * indexed videos and the seeded `ClipSampler`); fetch reads URLs into memory (local files pass through); demux
 * cuts each clip's packets and decode turns them into `--frames` RGB frames of `--size`² in two `WorkerPool`s
 * with their own concurrency (`video_classification_worker.ts`); aggregate + stack make `[B, T, H, W, 3]`
 * batches. `videoClassificationLoader` does all this and more: it demuxes all clips of a video in one open of
 * the file, interleaves videos through a shuffle buffer, replaces failed clips so batches stay full, and
 * accounts for every clip. With `--backend subprocess` or `--decoder nvdec|auto`, this example runs the loader
 * (sample → fetch → demux in a child process; NVDEC decode) instead of the explicit pipeline.
 *
 * The "training step" sleeps `--step-ms` (a GPU step leaves the CPU free). Per step it reports the step time and
 * how long the loop waited for data; at the end, samples/s and the data-wait fraction.
 *
 * Run: `deno run -A examples/video_classification.ts [DATASET] [options]` (`--help` lists them). DATASET
 * defaults to the demo dataset (made on first use).
 *
 * The module also exports `tune`, the loader with its settings as a search space, for
 * `sluice tune examples/video_classification.ts [-- DATASET]` (see the README, "Tuning").
 * @module
 */

import {
  choice,
  defineTuning,
  fetchBytes,
  formatStats,
  int,
  planLoader,
  videoClassificationLoader,
} from "@sluice/sluice";
import { PipelineBuilder, WorkerPool } from "@sluice/sluice/pipeline";
import { defineCommand, runCommand } from "@sluice/sluice/cli";
import type { ClipFrames, ClipTask } from "./video_classification_worker.ts";
import { ensureDemoDataset } from "./demo.ts";

/** A batch: `[B, T, H, W, 3]` RGB bytes and the class of each clip. */
interface Batch extends Disposable {
  data: Uint8Array | Float32Array;
  labels: Int32Array;
}

/** Where batches come from: the explicit pipeline, or the loader. */
interface Batches {
  it: AsyncIterable<Batch>;
  stats: () => string;
  close: () => Promise<void>;
}

interface Settings {
  dataset: string;
  batchSize: number;
  numFrames: number;
  size: number;
  subclip: number;
  demux: number;
  decode: number;
}

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

const WORKER = import.meta.resolve("./video_classification_worker.ts");

/** sampling → fetch → demux → decode → aggregate → stack, from public pieces. */
async function explicitPipeline(s: Settings): Promise<Batches> {
  // The loader's own plan: the same videos and the same seeded epochs the loader would load.
  const plan = await planLoader({
    dataset: s.dataset,
    batchSize: s.batchSize,
    clip: { numFrames: s.numFrames, width: s.size, height: s.size },
    sampler: { clipsPerVideo: 4, clipDurationSec: s.subclip },
  });
  const videos = plan.front.items;
  let epoch = 0;
  // A continuous source: each iteration of the pipeline is the next epoch.
  const epochs: Iterable<ClipTask> = {
    *[Symbol.iterator]() {
      for (const c of plan.sampler.epoch(epoch++)) {
        const v = videos[c.video];
        yield { src: v.path, window: [c.start, c.end], label: v.label, numFrames: s.numFrames, size: s.size };
      }
    },
  };
  const demuxPool = new WorkerPool(WORKER, { size: s.demux });
  const decodePool = new WorkerPool(WORKER, { size: s.decode });
  const frameBytes = s.numFrames * s.size * s.size * 3;
  const pipeline = new PipelineBuilder()
    .addSource(epochs, { name: "sampling", continuous: true })
    .pipe(async (t: ClipTask, ctx) => {
      // one fetch per clip: fine for local files (they pass through); the loader fetches a URL once per video
      const remote = typeof t.src === "string" && /^https?:\/\//.test(t.src);
      return remote ? { ...t, src: await fetchBytes(t.src as string, { signal: ctx.signal }) } : t;
    }, { name: "fetch", concurrency: 8 })
    .pipe("demuxClip", { name: "demux", executor: demuxPool, concurrency: s.demux })
    .pipe<ClipFrames>("decodeClip", { name: "decode", executor: decodePool, concurrency: s.decode })
    .pipe((c: ClipFrames) => {
      if (c.frames.shape[0] === s.numFrames) return c;
      console.error(`skipped a clip of ${c.source}: ${c.frames.shape[0]} of ${s.numFrames} frames`);
      return undefined; // the loader would replace it
    }, { name: "keep" })
    .aggregate(s.batchSize, { name: "aggregate" })
    .pipe((clips: ClipFrames[]): Batch => {
      const data = new Uint8Array(clips.length * frameBytes);
      clips.forEach((c, i) => data.set(c.frames.data, i * frameBytes));
      // dropped batches go with V8's next GC; the loader's batches free their pixels on dispose
      return { data, labels: Int32Array.from(clips, (c) => c.label), [Symbol.dispose]() {} };
    }, { name: "stack" })
    .build();
  return {
    it: pipeline,
    stats: () => formatStats(pipeline.stats()),
    close: async () => {
      await pipeline.stop();
      await Promise.all([demuxPool.close(), decodePool.close()]);
    },
  };
}

async function loader(s: Settings, backend: "inprocess" | "subprocess", decoder: "cpu" | "nvdec" | "auto") {
  const loader = await videoClassificationLoader({
    dataset: s.dataset,
    batchSize: s.batchSize,
    clip: { numFrames: s.numFrames, width: s.size, height: s.size },
    sampler: { clipsPerVideo: 4, clipDurationSec: s.subclip },
    backend,
    decode: decoder,
    concurrency: { demux: s.demux, decode: s.decode },
  });
  return { it: loader, stats: () => formatStats(loader.stats().pipeline), close: () => loader.close() };
}

/** Runs `steps` simulated training steps on `source`'s batches, epoch after epoch. */
async function train(source: Batches, steps: number, stepMs: number, logEvery: number): Promise<void> {
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
        const pct = ((wait / (end - last)) * 100).toFixed(0);
        console.log(
          `step ${String(step).padStart(4)}  step time ${(end - last).toFixed(1)} ms  ` +
            `data wait ${wait.toFixed(1)} ms (${pct}%)  labels [${[...batch.labels].join(",")}]`,
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
}

const command = defineCommand({
  name: "",
  summary: "a video-classification pipeline stage by stage, feeding a simulated training loop",
  positionals: [{
    name: "DATASET",
    help: "dataset (default: the demo dataset, made on first use)",
    optional: true,
  }],
  options: {
    "subclip-duration": { type: "number", default: 1, above: 0, max: 3600, help: "clip length, seconds" },
    "num-demux-threads": { type: "integer", default: 1, min: 1, max: 256, help: "demux Workers" },
    "num-decode-threads": {
      type: "integer",
      default: navigator.hardwareConcurrency ?? 1,
      defaultText: "one per core",
      min: 1,
      max: 256,
      help: "decode Workers",
    },
    "batch-size": { type: "integer", default: 8, min: 1, max: 4096, help: "clips per batch" },
    backend: {
      type: "enum",
      values: ["inprocess", "subprocess"],
      default: "inprocess",
      help: "subprocess: the loader, with sample → fetch → demux in a child process",
    },
    decoder: {
      type: "enum",
      values: ["cpu", "nvdec", "auto"],
      default: "cpu",
      help: "nvdec or auto: the loader, decoding on the GPU",
    },
    frames: { type: "integer", default: 8, min: 1, max: 1024, help: "frames per clip" },
    size: { type: "integer", default: 112, min: 2, max: 4096, help: "frame width and height" },
    "step-ms": { type: "number", default: 20, min: 0, max: 60_000, help: "simulated training step, ms" },
    steps: { type: "integer", default: 40, min: 1, max: 1_000_000, help: "training steps" },
    "log-every": { type: "integer", default: 10, min: 1, max: 1_000_000, help: "log every N steps" },
  },
  examples: ["--steps 20 --batch-size 4", "--backend subprocess --num-demux-threads 2"],
  async run({ values, positionals }) {
    const s: Settings = {
      dataset: positionals[0] ?? ensureDemoDataset(),
      batchSize: values["batch-size"],
      numFrames: values.frames,
      size: values.size,
      subclip: values["subclip-duration"],
      demux: values["num-demux-threads"],
      decode: values["num-decode-threads"],
    };
    const source = values.backend === "inprocess" && values.decoder === "cpu"
      ? await explicitPipeline(s)
      : await loader(s, values.backend, values.decoder);
    try {
      await train(source, values.steps, values["step-ms"], values["log-every"]);
    } finally {
      await source.close();
    }
    return 0;
  },
});

if (import.meta.main) {
  Deno.exit(
    await runCommand(command, Deno.args, { program: "deno run -A examples/video_classification.ts" }),
  );
}
