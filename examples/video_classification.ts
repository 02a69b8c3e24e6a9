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
 * `sluice tune examples/video_classification.ts [-- DATASET]` (see docs/tuning.md).
 * @module
 */

import { formatStats, videoClassificationLoader } from "@sluice/sluice";
import { fetchBytes } from "@sluice/sluice/dataset";
import { planLoader, resolveLoaderOptions } from "@sluice/sluice/loader";
import { PipelineBuilder, WorkerPool } from "@sluice/sluice/pipeline";
import { choice, defineTuning, int } from "@sluice/sluice/tune";
import { parseArgs } from "node:util";
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
  const plan = await planLoader(resolveLoaderOptions({
    dataset: s.dataset,
    batchSize: s.batchSize,
    clip: { numFrames: s.numFrames, width: s.size, height: s.size },
    sampler: { clipsPerVideo: 4, clipDurationSec: s.subclip },
  }));
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

/** The command line: each option, its default and what it is; the library checks the loader's ranges itself. */
const OPTIONS = {
  "subclip-duration": [1, "clip length, seconds"],
  "num-demux-threads": [1, "demux Workers"],
  "num-decode-threads": [navigator.hardwareConcurrency ?? 1, "decode Workers (default: one per core)"],
  "batch-size": [8, "clips per batch"],
  backend: [
    "inprocess",
    "inprocess, or subprocess: the loader, with sample → fetch → demux in a child process",
  ],
  decoder: ["cpu", "cpu, or nvdec or auto: the loader, decoding on the GPU"],
  frames: [8, "frames per clip"],
  size: [112, "frame width and height"],
  "step-ms": [20, "simulated training step, ms"],
  steps: [40, "training steps"],
  "log-every": [10, "log every N steps"],
} as const;

const USAGE = "Usage: deno run -A examples/video_classification.ts [DATASET] [options]\n" +
  "a video-classification pipeline stage by stage, feeding a simulated training loop; DATASET defaults to the\n" +
  "demo dataset (made on first use). Options:\n" +
  Object.entries(OPTIONS).map(([k, [d, help]]) => `  --${k.padEnd(20)} ${help} (default ${d})`).join("\n");

type Values = {
  -readonly [K in keyof typeof OPTIONS]: (typeof OPTIONS)[K][0] extends number ? number : string;
};

/** `Deno.args` as values: numbers where the default is one (a bad number is a usage error), else words. */
function parse(args: string[]): { values: Values; dataset?: string } | number {
  try {
    const parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        help: { type: "boolean", short: "h" },
        ...Object.fromEntries(Object.keys(OPTIONS).map((k) => [k, { type: "string" as const }])),
      },
    });
    if (parsed.values.help) {
      console.log(USAGE);
      return 0;
    }
    const values: Record<string, number | string> = {};
    for (const [k, [dflt]] of Object.entries(OPTIONS)) {
      const text = (parsed.values as Record<string, string | undefined>)[k];
      const v = text === undefined ? dflt : typeof dflt === "number" ? Number(text) : text;
      if (typeof v === "number" && !(Number.isFinite(v) && v >= 0)) {
        throw new Error(`--${k} needs a number, got "${text}"`);
      }
      values[k] = v;
    }
    if (parsed.positionals.length > 1) {
      throw new Error(`takes one DATASET, got ${parsed.positionals.join(" ")}`);
    }
    return { values: values as Values, dataset: parsed.positionals[0] };
  } catch (e) {
    console.error(`${(e as Error).message}\n${USAGE}`);
    return 2;
  }
}

async function run(args: string[]): Promise<number> {
  const parsed = parse(args);
  if (typeof parsed === "number") return parsed;
  const { values } = parsed;
  const s: Settings = {
    dataset: parsed.dataset ?? ensureDemoDataset(),
    batchSize: values["batch-size"],
    numFrames: values.frames,
    size: values.size,
    subclip: values["subclip-duration"],
    demux: values["num-demux-threads"],
    decode: values["num-decode-threads"],
  };
  const source = values.backend === "inprocess" && values.decoder === "cpu"
    ? await explicitPipeline(s)
    : await loader(
      s,
      values.backend as "inprocess" | "subprocess",
      values.decoder as "cpu" | "nvdec" | "auto",
    );
  try {
    await train(source, values.steps, values["step-ms"], values["log-every"]);
  } finally {
    await source.close();
  }
  return 0;
}

if (import.meta.main) Deno.exit(await run(Deno.args));
