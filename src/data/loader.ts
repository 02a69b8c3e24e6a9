/**
 * `videoClassificationLoader`: batches of labelled clips for training a video classifier, built on the pipeline
 * engine:
 *
 * ```
 * sample → fetch → demux → disaggregate → decode → aggregate → collate → (your training loop)
 * ```
 *
 * - The dataset is indexed once (durations, keyframes when `sampler.keyframeAligned`); the sampler then plans each
 *   epoch up front, so the pipeline prefetches as far ahead as its queues allow.
 * - `backend: "subprocess"` runs sample → fetch → demux in a child Deno process (`backend_module.ts`); the parent
 *   decodes, batches and collates. `"inprocess"` (default) runs everything here.
 * - Decoding runs in a `WorkerPool` of `concurrency.decode` Workers (default: one per core), each clip resized to
 *   `clip.width`×`clip.height` RGB and resampled to `clip.frameRate` when given. In-process, demux tasks run in
 *   the same pool (one Worker per core in all, no oversubscription).
 * - `decode: "auto"` uses NVDEC when `src/nvdec` says it is available, the CPU otherwise (logging one line);
 *   `"nvdec"` fails when it is not available. NVDEC clips are resized on the GPU and copied to host memory, so
 *   batches look the same whichever decoder made them (default decode concurrency: the GPU's NVDEC engines).
 * - Failed items (missing file, HTTP 404, undecodable video) are counted per stage, logged and skipped; the epoch
 *   goes on, within the stages' `maxFailures` budget. Batches are then short of those clips.
 *
 * - Memory: every clip's and packet's buffer is freed as soon as it has been copied into a batch or decoded (not
 *   at V8's next GC), and the loader pins glibc's mmap threshold for the process (`mmap_threshold.ts`) so freed
 *   big buffers go back to the system instead of fragmenting the malloc heaps. Batches are `Disposable`:
 *   `for await (using batch of loader)` frees each batch's pixels when its step ends, which keeps RSS flat at the
 *   working set; batches that are merely dropped wait for V8's next collection (a few tens of MiB at most).
 *   `memoryReport()` shows where the memory is (V8 heaps of the main thread and each Worker, external memory,
 *   live FFmpeg objects).
 *
 * Iterate the loader (`for await (using batch of loader)`) once per epoch; `close()` it (or `await using`) at the
 * end to stop Workers and the backend child.
 * @module
 */

import { errorText, InvalidArgumentError } from "../errors.ts";
import { PipelineBuilder } from "../pipeline/builder.ts";
import type { Pipeline, PipelineStats } from "../pipeline/pipeline.ts";
import type { MaxFailures } from "../pipeline/stage.ts";
import { WorkerPool } from "../pipeline/worker_pool.ts";
import { type BackendSource, type BackendStats, spawnBackend } from "../backend/spawn.ts";
import type { ClipDecodeOptions, ClipPackets, WorkerMemory } from "./clip_worker.ts";
import { nativeObjectCounts } from "../media/av_objects.ts";
import { releaseBuffers } from "../pipeline/transfer.ts";
import { fixMmapThreshold } from "./mmap_threshold.ts";
import { type Batch, type BatchLayout, collate, type DecodedClip } from "./collate.ts";
import { openDataset, type VideoDataset } from "./dataset.ts";
import type { FetchOptions } from "./fetch.ts";
import { buildFront, CLIP_WORKER, type FrontArgs } from "./front.ts";
import { ClipSampler, type SampledVideo, type SamplerOptions } from "./sampler.ts";
import { indexDataset, type IndexFailure } from "./video_index.ts";
import { nvdecAvailable, nvdecConcurrency, selectDecoder } from "../nvdec/available.ts";

/** Options of {@link videoClassificationLoader}. */
export interface LoaderOptions {
  /** A dataset, or where to open one (directory tree, CSV/JSONL manifest, manifest URL). */
  dataset: VideoDataset | string;
  /** Sampling, shuffling and sharding (see `ClipSampler`). `clipDurationSec` defaults to the clip's length. */
  sampler?: SamplerOptions;
  batchSize: number;
  /** What one clip becomes: `numFrames` frames of `width`×`height`, at `frameRate` fps when given. */
  clip: { numFrames: number; frameRate?: number; width: number; height: number };
  /** `[B, T, H, W, 3]` (default "BTHWC") or planar `[B, 3, T, H, W]` ("BCTHW"). */
  layout?: BatchLayout;
  /** Decoder: "cpu" (default), "nvdec", or "auto". */
  decode?: "cpu" | "nvdec" | "auto";
  /** Where sample → fetch → demux run (default "inprocess"). */
  backend?: "inprocess" | "subprocess";
  /** Tasks at once per stage (defaults: fetch 8, demux 1, decode = cores). */
  concurrency?: { fetch?: number; demux?: number; decode?: number };
  /** Batches buffered for the consumer (default 3); also the subprocess backend's item buffer. */
  bufferSize?: number;
  /**
   * Keep the sampler's order through the concurrent stages (default true), so the same seed gives the same
   * batches. `false` lets fast items overtake slow ones (a little more throughput, batches vary run to run).
   */
  ordered?: boolean;
  /** Drop a last short batch of an epoch (default false). */
  dropLast?: boolean;
  /** HTTP retries, backoff and timeout. */
  fetch?: Omit<FetchOptions, "signal" | "range">;
  /** Failure budget of the fetch, demux and decode stages (the pipeline's default when omitted). */
  maxFailures?: MaxFailures;
  /** Called with stats every `reportInterval` ms while an epoch runs. */
  onReport?: (stats: PipelineStats) => void;
  reportInterval?: number;
  /** Where failure and info lines go (default `console.error`). */
  log?: (line: string) => void;
}

/** Loader statistics: the pipeline's, the backend child's (subprocess), and indexing failures. */
export interface LoaderStats {
  pipeline: PipelineStats;
  backend: BackendStats | null;
  indexFailures: IndexFailure[];
}

/** Where a loader's memory is: this thread's V8 heap and external memory, each decode Worker's, and RSS. */
export interface LoaderMemory {
  /** This process's resident set size, bytes (the backend child's is not included). */
  rss: number;
  /** This (main) thread: V8 heap and external (ArrayBuffer) memory, bytes, and its FFmpeg objects. */
  main: WorkerMemory;
  /** One entry per decode Worker running now. */
  workers: WorkerMemory[];
}

/** A running loader; see the module docs. */
export class VideoClassificationLoader implements AsyncIterable<Batch>, AsyncDisposable {
  /** The dataset it loads from. */
  readonly dataset: VideoDataset;
  /** The sampler planning its epochs. */
  readonly sampler: ClipSampler;
  /** Clips per epoch for this rank. */
  readonly clipsPerEpoch: number;
  /** Batches per epoch (fewer when items fail). */
  readonly batchesPerEpoch: number;
  /** The decoder in use after resolving "auto". */
  readonly decoder: "cpu" | "nvdec";
  readonly backend: "inprocess" | "subprocess";
  /** Videos that could not be indexed (left out of every epoch). */
  readonly indexFailures: IndexFailure[];
  readonly #pipeline: Pipeline<Batch>;
  readonly #backendSource: BackendSource | null;
  readonly #decodePool: WorkerPool;
  #epoch = 0;

  /** Use {@link videoClassificationLoader}. */
  constructor(
    init: {
      dataset: VideoDataset;
      sampler: ClipSampler;
      batchSize: number;
      dropLast: boolean;
      decoder: "cpu" | "nvdec";
      backend: "inprocess" | "subprocess";
      indexFailures: IndexFailure[];
      pipeline: Pipeline<Batch>;
      backendSource: BackendSource | null;
      decodePool: WorkerPool;
    },
  ) {
    this.dataset = init.dataset;
    this.sampler = init.sampler;
    this.clipsPerEpoch = init.sampler.length;
    this.batchesPerEpoch = init.dropLast
      ? Math.floor(this.clipsPerEpoch / init.batchSize)
      : Math.ceil(this.clipsPerEpoch / init.batchSize);
    this.decoder = init.decoder;
    this.backend = init.backend;
    this.indexFailures = init.indexFailures;
    this.#pipeline = init.pipeline;
    this.#backendSource = init.backendSource;
    this.#decodePool = init.decodePool;
  }

  /** The next epoch to run (0 before the first). */
  get epoch(): number {
    return this.#epoch;
  }

  /** Runs one epoch. */
  [Symbol.asyncIterator](): AsyncIterator<Batch> {
    this.#epoch++;
    return this.#pipeline[Symbol.asyncIterator]();
  }

  /** Current statistics. */
  stats(): LoaderStats {
    return {
      pipeline: this.#pipeline.stats(),
      backend: this.#backendSource?.stats() ?? null,
      indexFailures: this.indexFailures,
    };
  }

  /**
   * Where this process's memory is (diagnostics, e.g. `bench/rss_epochs.ts`): this thread's V8 heap, external
   * memory and FFmpeg objects, and the same for each decode Worker (each answers after its current task).
   * With `gc` (and `--v8-flags=--expose-gc`), every heap is collected first.
   */
  async memoryReport(gc = false): Promise<LoaderMemory> {
    const workers = await this.#decodePool.callEach<WorkerMemory>("memoryReport", [gc]);
    if (gc) (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapTotal, heapUsed, external } = Deno.memoryUsage();
    return { rss, main: { heapTotal, heapUsed, external, native: nativeObjectCounts() }, workers };
  }

  /** Stops the pipeline, its Workers and the backend child. Idempotent. */
  async close(): Promise<void> {
    await this.#pipeline.stop();
    await this.#backendSource?.close();
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Opens and indexes the dataset and builds the loader; see the module docs and {@link LoaderOptions}. */
export async function videoClassificationLoader(opts: LoaderOptions): Promise<VideoClassificationLoader> {
  const log = opts.log ?? ((m: string) => console.error(m));
  checkOptions(opts);
  fixMmapThreshold();
  const dataset = typeof opts.dataset === "string" ? await openDataset(opts.dataset) : opts.dataset;
  const keyframes = opts.sampler?.keyframeAligned ?? false;
  const index = await indexDataset(dataset, { keyframes, fetch: opts.fetch });
  for (const f of index.failures) log(`sluice: skipping ${f.path}: ${errorText(f.error, f.path)}`);
  const kept = index.videos.flatMap((v, i) => v === null ? [] : [i]);
  if (kept.length === 0) {
    throw new InvalidArgumentError(`${dataset.root}: no video of the dataset could be indexed`);
  }
  const ranges: SampledVideo[] = kept.map((i) => {
    const v = index.videos[i]!;
    return v.keyframes
      ? { start: v.start, end: v.end, keyframes: v.keyframes }
      : { start: v.start, end: v.end };
  });
  const clipDurationSec = opts.sampler?.clipDurationSec ?? defaultClipDuration(opts.clip, index.videos);
  const sampler = new ClipSampler(ranges, { ...opts.sampler, clipDurationSec });
  const decoder = resolveDecoder(opts.decode ?? "cpu", log);
  const layout = opts.layout ?? "BTHWC";
  const cores = navigator.hardwareConcurrency ?? 1;
  const decode: ClipDecodeOptions = {
    numFrames: opts.clip.numFrames,
    width: opts.clip.width,
    height: opts.clip.height,
    planar: layout === "BCTHW",
  };
  if (opts.clip.frameRate !== undefined) decode.frameRate = opts.clip.frameRate;
  const args: FrontArgs = {
    items: kept.map((i) => dataset.items[i]),
    ranges,
    datasetIndex: kept,
    sampler: { ...sampler.options },
    firstEpoch: 0,
    decode,
    concurrency: { fetch: opts.concurrency?.fetch ?? 8, demux: opts.concurrency?.demux ?? 1 },
    fetch: opts.fetch ?? {},
  };
  if (opts.maxFailures !== undefined) args.maxFailures = opts.maxFailures;
  const ordered = opts.ordered ?? true;
  args.ordered = ordered;
  const backend = opts.backend ?? "inprocess";
  const decodeConcurrency = opts.concurrency?.decode ?? (decoder === "nvdec" ? nvdecConcurrency() : cores);
  const decodePool = new WorkerPool(CLIP_WORKER, {
    size: backend === "subprocess" ? decodeConcurrency : Math.max(decodeConcurrency, args.concurrency.demux),
  });
  let front: PipelineBuilder<ClipPackets>;
  let backendSource: BackendSource | null = null;
  if (backend === "subprocess") {
    backendSource = spawnBackend({
      module: new URL("./backend_module.ts", import.meta.url),
      export: "default",
      args,
      bufferSize: Math.max(opts.bufferSize ?? 3, 2 * (opts.concurrency?.decode ?? cores)),
      permissions: ["--allow-read", "--allow-env", "--allow-ffi", "--allow-net"],
      log,
    });
    front = new PipelineBuilder().addSource(backendSource as AsyncIterable<ClipPackets>, {
      name: "backend",
      continuous: true,
    });
  } else {
    front = buildFront(args, decodePool);
  }
  const numFrames = opts.clip.numFrames;
  const pipeline = front
    .pipe<DecodedClip>(decoder === "nvdec" ? "decodeClipNvdec" : "decodeClip", {
      name: "decode",
      executor: decodePool,
      maxFailures: opts.maxFailures,
      ordered,
    })
    .aggregate(opts.batchSize, { name: "aggregate", dropLast: opts.dropLast ?? false })
    .pipe(function collateBatch(clips: DecodedClip[]): Batch {
      const batch = collate(clips, numFrames, layout);
      releaseBuffers(clips); // copied into the batch: free the clips' buffers now, not at the next GC
      return batch;
    }, { name: "collate" })
    .addSink({ bufferSize: opts.bufferSize ?? 3 })
    // A dead, stalled or broken backend child ends the loop with its own error (BackendExitedError, ...).
    .build({
      onReport: opts.onReport,
      reportInterval: opts.reportInterval,
      log,
      signal: backendSource?.failure,
    });
  return new VideoClassificationLoader({
    dataset,
    sampler,
    batchSize: opts.batchSize,
    dropLast: opts.dropLast ?? false,
    decoder,
    backend,
    indexFailures: index.failures,
    pipeline,
    backendSource,
    decodePool,
  });
}

function checkOptions(opts: LoaderOptions): void {
  const posInt = (v: unknown) => Number.isInteger(v) && (v as number) >= 1;
  if (!posInt(opts.batchSize)) {
    throw new InvalidArgumentError(`loader: batchSize must be >= 1, got ${opts.batchSize}`);
  }
  const c = opts.clip;
  if (!c || !posInt(c.numFrames) || !posInt(c.width) || !posInt(c.height)) {
    throw new InvalidArgumentError("loader: clip needs positive integer numFrames, width and height");
  }
  if (c.frameRate !== undefined && !(c.frameRate > 0)) {
    throw new InvalidArgumentError(`loader: clip.frameRate must be > 0, got ${c.frameRate}`);
  }
  for (const [k, v] of Object.entries(opts.concurrency ?? {})) {
    if (v !== undefined && !posInt(v)) {
      throw new InvalidArgumentError(`loader: concurrency.${k} must be >= 1`);
    }
  }
  if (opts.backend !== undefined && opts.backend !== "inprocess" && opts.backend !== "subprocess") {
    throw new InvalidArgumentError(
      `loader: backend must be "inprocess" or "subprocess", got "${opts.backend}"`,
    );
  }
  if (opts.decode !== undefined && !["cpu", "nvdec", "auto"].includes(opts.decode)) {
    throw new InvalidArgumentError(`loader: decode must be "cpu", "nvdec" or "auto", got "${opts.decode}"`);
  }
}

/** numFrames at the clip's frame rate, else at the slowest indexed video's rate (25 fps when unknown). */
function defaultClipDuration(
  clip: LoaderOptions["clip"],
  videos: readonly ({ frameRate: number } | null)[],
): number {
  if (clip.frameRate !== undefined) return clip.numFrames / clip.frameRate;
  const rates = videos.flatMap((v) => v !== null && v.frameRate > 0 ? [v.frameRate] : []);
  return clip.numFrames / (rates.length > 0 ? Math.min(...rates) : 25);
}

/** "auto" → NVDEC when available (else CPU, one log line); "nvdec" fails when it is not available. */
function resolveDecoder(want: "cpu" | "nvdec" | "auto", log: (m: string) => void): "cpu" | "nvdec" {
  if (want === "nvdec") {
    const a = nvdecAvailable();
    if (!a.ok) {
      throw new InvalidArgumentError(
        `loader: decode "nvdec" requested but NVDEC is not available: ${a.reason}`,
      );
    }
    return "nvdec";
  }
  return selectDecoder(want, log);
}
