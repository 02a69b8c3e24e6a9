/**
 * `runLoad`: runs the video loader for a number of batches or epochs and measures it: samples/s, frames/s, the
 * per-stage table, the bottleneck, failures, peak RSS (this process, and the backend child's), RSS after each
 * epoch. `sluice load`, the demo and the benches all use it, so they report the same numbers.
 * @module
 */

import { formatStats } from "../pipeline/format_stats.ts";
import type { PipelineStats } from "../pipeline/stats.ts";
import { type LoaderOptions, openLoader, type VideoClassificationLoader } from "../loader/loader.ts";
import { resolveLoaderOptions } from "../loader/loader_options.ts";
import type { ClipCounts } from "../loader/batch/clip_stats.ts";
import { formatProfile, type ProfileStats } from "../loader/decode/clip_profile.ts";
import { BackendExitedError } from "../errors.ts";
import { formatLoaderStats, loaderStatsParts } from "../loader/stats_text.ts";
import { procRss } from "../tune/proc.ts";
import { LiveBlock, type Out } from "./tty.ts";
import type { ClipFailure } from "../loader/clip/life.ts";

/** Options of {@link runLoad}: the loader's, plus how long to run. */
export interface RunLoadOptions extends LoaderOptions {
  /** Stop after this many batches (default: run `epochs` epochs). */
  batches?: number;
  /** Epochs to run when `batches` is not given (default 1). */
  epochs?: number;
  /** Where the live table is drawn in place when it is a terminal (default: none). */
  live?: Out;
  /** Milliseconds between live redraws (default 500). */
  refreshMs?: number;
  /** Called at the end of each epoch, before RSS is sampled (e.g. to trigger a GC in a memory bench). */
  onEpochEnd?: (epoch: number) => void;
  /** Simulated training step per batch, ms (default 0). */
  stepMs?: number;
  /**
   * Stops the run early (Ctrl-C): the batches so far are measured and the summary says `interrupted`. A backend
   * child killed by SIGINT (a terminal's Ctrl-C reaches the whole process group) counts as the same.
   */
  signal?: AbortSignal;
}

/**
 * The run's clips, as the loader counts them (`stats().clips.total`, summed over the epochs started): planned =
 * delivered + failed + dropped + pending, `replaced` of the failed filled by a substitute, the failures
 * listed (file, window, stage, error; the first 100 of each epoch), and the decode work behind the clips of
 * batches (`decodedFrames`, `skippedFrames`, `emittedFrames`, `decodeAmplification`, `sharedClips`).
 */
export interface LoadClipCounts extends ClipCounts {
  failures: ClipFailure[];
}

/** What {@link runLoad} measured. */
export interface LoadSummary {
  dataset: string;
  backend: string;
  decoder: string;
  batchSize: number;
  framesPerClip: number;
  /** Clip frame size in pixels. */
  width: number;
  height: number;
  /** Batch layout, "BTHWC" or "BCTHW". */
  layout: string;
  /** The sampler's seed. */
  seed: number;
  /** Frames per second clips were resampled to; null: each video's own rate. */
  frameRate: number | null;
  /** True when the run was stopped early through `signal` (Ctrl-C): the figures cover the batches so far. */
  interrupted: boolean;
  clips: LoadClipCounts;
  epochs: number;
  batches: number;
  samples: number;
  frames: number;
  /** Seconds from the first request for a batch to the last batch (indexing and start-up excluded). */
  elapsedSec: number;
  /** Seconds to open, index and start the loader. */
  startupSec: number;
  samplesPerSec: number;
  framesPerSec: number;
  /** Failed items per stage (only stages with failures), including items the index left out. */
  failures: Record<string, number>;
  bottleneck: string | null;
  /** The loader pipeline's stats at the end (per-stage rows). */
  pipeline: PipelineStats;
  /** The backend child's own pipeline stats (subprocess backend), else null. */
  child: PipelineStats | null;
  /** The per-clip cost breakdown (`--profile`), else null. */
  profile: ProfileStats | null;
  /** Peak resident set size of this process and of the backend child (null when not applicable), bytes. */
  peakRssBytes: number;
  childPeakRssBytes: number | null;
  /** Resident set size after each epoch (this process + backend child), bytes. */
  rssAfterEpochBytes: number[];
  /** The backend child's share of `rssAfterEpochBytes` (empty without a child). */
  childRssAfterEpochBytes: number[];
}

/** Runs the loader and measures it; see the module docs. */
export async function runLoad(opts: RunLoadOptions): Promise<LoadSummary> {
  const live = opts.live ? new LiveBlock(opts.live) : null;
  const log = live?.active ? (m: string) => live.log(m) : opts.log;
  const t0 = performance.now();
  const {
    batches: _b,
    epochs: _e,
    live: _l,
    refreshMs: _r,
    onEpochEnd: _o,
    stepMs: _s,
    signal: _g,
    ...options
  } = opts;
  await using loader = await openLoader(resolveLoaderOptions({ ...options, log }));
  const startupSec = (performance.now() - t0) / 1000;
  const run = new LoadRun(loader, opts);
  const epochs = opts.batches !== undefined ? Infinity : opts.epochs ?? 1;
  const timer = live?.active ? setInterval(() => run.draw(live), opts.refreshMs ?? 500) : undefined;
  const stop = stopPromise(opts.signal);
  try {
    while (run.epochsRun < epochs && !opts.signal?.aborted) {
      const end = await run.epoch(stop.promise);
      run.interrupted = end === "stopped";
      if (end !== "end") break;
      run.epochEnded();
    }
  } catch (e) {
    if (!opts.signal?.aborted && !(e instanceof BackendExitedError && e.signal === "SIGINT")) throw e;
    run.interrupted = true;
  } finally {
    stop.dispose();
    clearInterval(timer);
    live?.clear();
  }
  run.interrupted ||= opts.signal?.aborted ?? false;
  return run.summary(startupSec);
}

/** One run of an open loader: its epochs, what it counted and sampled as they ran, and the summary they make. */
class LoadRun {
  batches = 0;
  samples = 0;
  epochsRun = 0;
  interrupted = false;
  /** The backend child's peak RSS, bytes (null until read). */
  childPeakRss: number | null = null;
  /** RSS after each epoch (this process + backend child), and the child's share, bytes. */
  readonly rssAfterEpoch: number[] = [];
  readonly childRssAfterEpoch: number[] = [];
  readonly #t1 = performance.now();
  readonly #maxBatches: number;

  constructor(readonly loader: VideoClassificationLoader, readonly opts: RunLoadOptions) {
    this.#maxBatches = opts.batches ?? Infinity;
  }

  /** One epoch, until it ends, the batch limit is reached, or the run is stopped (`stop` settles). */
  async epoch(stop: Promise<typeof STOPPED>): Promise<"end" | "limit" | "stopped"> {
    const it = this.loader[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = it.next();
        const r = await Promise.race([next, stop]);
        if (r === STOPPED) {
          next.then((x) => x.done || x.value[Symbol.dispose](), () => {});
          return "stopped";
        }
        if (r.done) return "end";
        using batch = r.value;
        if (this.opts.stepMs) await new Promise((res) => setTimeout(res, this.opts.stepMs));
        this.batches++;
        this.samples += batch.labels.length;
        this.#sampleChildPeak();
        if (this.batches >= this.#maxBatches) return "limit";
      }
    } finally {
      await it.return?.();
    }
  }

  /** An epoch ran to its end: counts it, tells `onEpochEnd`, then samples RSS. */
  epochEnded(): void {
    this.epochsRun++;
    this.opts.onEpochEnd?.(this.epochsRun);
    const child = procRss(this.loader.stats().backend?.pid, "VmRSS");
    this.rssAfterEpoch.push(Deno.memoryUsage().rss + (child ?? 0));
    if (child !== null) this.childRssAfterEpoch.push(child);
  }

  /** Draws the live block: the run's progress and the per-stage table. */
  draw(live: LiveBlock): void {
    const secs = (performance.now() - this.#t1) / 1000;
    const header = `epoch ${this.loader.epoch}  batches ${this.batches}  samples ${this.samples}  ` +
      `${(this.samples / Math.max(secs, 1e-9)).toFixed(1)} samples/s  rss ${mib(Deno.memoryUsage().rss)} MiB`;
    live.draw(`${header}\n${formatStats(this.loader.stats().pipeline, { width: live.columns - 1 })}`);
  }

  /** What the run measured (`startupSec`: opening the loader). */
  summary(startupSec: number): LoadSummary {
    const { opts, loader, samples, batches } = this;
    const elapsedSec = (performance.now() - this.#t1) / 1000;
    const stats = loader.stats();
    const { failures, child } = loaderStatsParts(stats);
    const frames = samples * opts.clip.numFrames;
    return {
      dataset: typeof opts.dataset === "string" ? opts.dataset : opts.dataset.root,
      backend: loader.backend,
      decoder: loader.decoder,
      batchSize: opts.batchSize,
      framesPerClip: opts.clip.numFrames,
      width: opts.clip.width,
      height: opts.clip.height,
      layout: opts.layout ?? "BTHWC",
      seed: loader.sampler.options.seed,
      frameRate: opts.clip.frameRate ?? null,
      interrupted: this.interrupted,
      clips: { ...stats.clips.total, failures: stats.clips.epochs.flatMap((e) => e.failures) },
      epochs: this.epochsRun + (batches >= this.#maxBatches && this.#maxBatches !== Infinity ? 1 : 0),
      batches,
      samples,
      frames,
      elapsedSec,
      startupSec,
      samplesPerSec: samples / elapsedSec,
      framesPerSec: frames / elapsedSec,
      failures,
      bottleneck: stats.pipeline.bottleneck,
      pipeline: stats.pipeline,
      child,
      profile: stats.profile,
      peakRssBytes: procRss("self", "VmHWM") ?? Deno.memoryUsage().rss,
      childPeakRssBytes: this.childPeakRss,
      rssAfterEpochBytes: this.rssAfterEpoch,
      childRssAfterEpochBytes: this.childRssAfterEpoch,
    };
  }

  /** The child's high-water mark is read while it runs: leaving the loop early stops the backend child. */
  #sampleChildPeak(): void {
    const hwm = procRss(this.loader.stats().backend?.pid, "VmHWM");
    if (hwm !== null) this.childPeakRss = Math.max(this.childPeakRss ?? 0, hwm);
  }
}

const STOPPED = Symbol("stopped");

/** A promise that resolves to {@link STOPPED} when `signal` aborts (never without one). */
function stopPromise(signal: AbortSignal | undefined): { promise: Promise<typeof STOPPED>; dispose(): void } {
  let onAbort = () => {};
  const promise = new Promise<typeof STOPPED>((resolve) => {
    onAbort = () => resolve(STOPPED);
    if (signal?.aborted) resolve(STOPPED);
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
  return { promise, dispose: () => signal?.removeEventListener("abort", onAbort) };
}

/**
 * A human-readable summary (the per-stage table is `formatStats`'s, fitted to `width` columns when given, e.g.
 * a terminal's).
 */
export function formatSummary(s: LoadSummary, width?: number): string {
  const lines = [
    ...(s.interrupted ? ["interrupted: the figures cover the batches delivered before Ctrl-C"] : []),
    `dataset ${s.dataset}  backend ${s.backend}  decoder ${s.decoder}  batch ${s.batchSize} x ${s.framesPerClip} ` +
    `frames of ${s.width}x${s.height} ${s.layout}` + (s.frameRate === null ? "" : ` at ${s.frameRate} fps`) +
    `  seed ${s.seed}`,
    `${s.batches} batches, ${s.samples} samples, ${s.frames} frames in ${s.elapsedSec.toFixed(2)} s ` +
    `(start-up ${s.startupSec.toFixed(2)} s, ${s.epochs} epoch(s))`,
    `samples/s ${s.samplesPerSec.toFixed(1)}   frames/s ${s.framesPerSec.toFixed(0)}`,
    `peak RSS ${mib(s.peakRssBytes)} MiB` +
    (s.childPeakRssBytes !== null ? `, backend child ${mib(s.childPeakRssBytes)} MiB` : ""),
    formatLoaderStats(s, width),
    ...(s.profile === null ? [] : [formatProfile(s.profile)]),
  ];
  return lines.join("\n");
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}
