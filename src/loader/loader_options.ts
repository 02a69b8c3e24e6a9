/**
 * The options of `videoClassificationLoader`, their defaults and their valid ranges: {@link checkLoaderOptions}
 * rejects an option that makes no sense with one line naming it and its valid range, and {@link resolveClipSpec}
 * turns the `clip` options into the one `ClipSpec` every decode Worker follows.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import type { MaxFailures } from "../pipeline/stage.ts";
import type { PipelineHook } from "../pipeline/hooks.ts";
import type { AutoConcurrencyOptions } from "../pipeline/auto_policy.ts";
import type { ClipDtype, ClipSpec, FrameSampling, Interpolation, ResizeMode } from "./clip_spec.ts";
import type { BatchLayout } from "./collate.ts";
import type { VideoDataset } from "../dataset/dataset.ts";
import type { FetchOptions } from "../dataset/fetch.ts";
import type { SamplerOptions } from "../dataset/sampler.ts";

/** What one clip becomes; see the README's "Datasets and loaders" for exactly which frames a clip holds. */
export interface ClipOptions {
  /** Frames per clip, `[1, 10000]`. */
  numFrames: number;
  /** Output width in pixels, `[1, 16384]`. */
  width: number;
  /** Output height in pixels, `[1, 16384]`. */
  height: number;
  /**
   * How the frames are chosen inside the clip's window: `"consecutive"` (the video's own frames, one after
   * another), `"rate"` (resampled to `frameRate`), `"uniform"` (spread evenly over the window), `"stride"`
   * (every `stride`-th frame).
   * @default {"rate" with frameRate, "stride" with stride, else "consecutive"}
   */
  sampling?: FrameSampling["kind"];
  /** `"rate"` only: frames per second, `(0, 1000]`. */
  frameRate?: number;
  /** `"stride"` only: take every `stride`-th frame, `[1, 1000]`. */
  stride?: number;
  /** How a frame becomes `width`×`height` (see `ResizeMode`). @default {"stretch"} */
  resize?: ResizeMode;
  /** `"random-resized-crop"`: fraction of the frame's area, `0 < min <= max <= 1`. @default {[0.08, 1]} */
  scale?: [number, number];
  /** `"random-resized-crop"`: aspect ratio range, `0 < min <= max`. @default {[3/4, 4/3]} */
  ratio?: [number, number];
  /** Probability of mirroring a clip, `[0, 1]`. @default {0} */
  flipProbability?: number;
  /** The resize filter. @default {"bilinear"} */
  interpolation?: Interpolation;
  /** Sample type: bytes, or floats normalised with `mean` and `std`. @default {"uint8"} */
  dtype?: ClipDtype;
  /**
   * `"float32"` only: per-channel (R, G, B) mean and standard deviation on the `[0, 1]` scale; samples are
   * `(x / 255 - mean) / std`. The defaults leave samples in `[0, 1]`: pass your model's values to normalise.
   * @default {[0, 0, 0] and [1, 1, 1]}
   */
  mean?: [number, number, number];
  /** See `mean`. */
  std?: [number, number, number];
  /** Apply the video's display rotation. @default {true} */
  rotate?: boolean;
  /** A clip whose padding would exceed this fraction of `numFrames` fails, `[0, 1]`. @default {0.5} */
  maxPadFraction?: number;
}

/**
 * How the loader avoids decode work (the README's "Decoding less"). Every switch is on by default and changes no
 * pixel; turn one off to measure what it brings.
 */
export interface DecodeLessOptions {
  /**
   * Leave undecoded the non-reference frames no slot shows: between the keyframe and the window, and between
   * the frames a stride or a resampling keeps (default true).
   */
  skip?: boolean;
  /** Serve the clips of one video whose packets overlap (same GOP) from one forward decode pass (default true). */
  once?: boolean;
  /**
   * Bytes that clips decoded ahead of their turn (by another clip's pass) may hold, default 256 MiB: it bounds how
   * far apart in the epoch's output two clips decoded in one pass may be (`⌊onceMemory / clip bytes⌋` clips).
   */
  onceMemory?: number;
  /** Give decode tasks idle cores as FFmpeg threads when fewer clips are left than cores (default true). */
  threads?: boolean;
}

/** What happens to a clip that cannot be loaded; see the README's "Full batches". */
export type OnClipError = "replace" | "skip" | "fail";

/** A stage's concurrency: tasks at once, or `"auto"` for the pipeline's controller to set. */
export type StageConcurrency = number | "auto";

/** The tasks a stage starts with: its number, or 1 under `"auto"` (where the controller starts). */
export function startSize(c: StageConcurrency): number {
  return c === "auto" ? 1 : c;
}

/** Options of `videoClassificationLoader`. */
export interface LoaderOptions {
  /** A dataset, or where to open one (directory tree, CSV/JSONL manifest, manifest URL). */
  dataset: VideoDataset | string;
  /**
   * Sampling, shuffling, sharding and the shuffle buffer (see `ClipSampler`). `clipDurationSec` defaults to the
   * time the clip's frames take: `numFrames` frames at the slowest video's rate (`× stride`), or at `frameRate`;
   * for `"uniform"` sampling, the whole video.
   */
  sampler?: SamplerOptions;
  /** Clips per batch, `[1, 65536]`. */
  batchSize: number;
  /** What one clip becomes. */
  clip: ClipOptions;
  /** `[B, T, H, W, 3]` (default "BTHWC") or planar `[B, 3, T, H, W]` ("BCTHW"). */
  layout?: BatchLayout;
  /** Decoder: "cpu" (default), "nvdec", or "auto". */
  decode?: "cpu" | "nvdec" | "auto";
  /** Where sample → fetch → demux run (default "inprocess"). */
  backend?: "inprocess" | "subprocess";
  /**
   * Tasks at once per stage, `[1, 256]` each, or `"auto"`: the pipeline's controller sets it while the loader
   * runs, from 1 up (defaults: fetch 8, demux 1, decode = cores). With the subprocess backend, fetch and demux
   * are set by the child's own controller.
   */
  concurrency?: { fetch?: StageConcurrency; demux?: StageConcurrency; decode?: StageConcurrency };
  /**
   * The auto-concurrency controller's tuning, for stages set to `"auto"` (see `AutoConcurrencyOptions`). The
   * loader's default `cpuBudget` is twice the cores: its demux and decode tasks await Workers, transfers and
   * shared decode passes, so a task in flight is not a busy core (on 2 cores, decode 3–4 measured fastest).
   */
  autoConcurrency?: AutoConcurrencyOptions;
  /** Batches buffered for the consumer, `[1, 1024]` (default 3); also the subprocess backend's item buffer. */
  bufferSize?: number;
  /**
   * Keep the sampler's order through the concurrent stages (default true), so the same seed gives the same
   * batches. `false` lets fast items overtake slow ones (a little more throughput, batches vary run to run).
   */
  ordered?: boolean;
  /** Drop a last short batch of an epoch (default false). */
  dropLast?: boolean;
  /**
   * Batch slots, `[1, 1024]`: assemble batches in this many fixed batch buffers (one shared-memory mapping,
   * Linux), reused batch after batch. Each decode Worker writes its clip's pixels straight into its place in the
   * batch, so they are never copied after decode (`sluice serve` hands the same memory to the trainer), and
   * the loader's batch memory stays at `slots` batches. A batch gives its slot back when disposed
   * (`for await (using batch of loader)`): the consumer may hold at most `slots - 1` batches while it asks for
   * the next one; holding all of them and asking for another throws (the batch could never be made). Copy
   * what you keep longer (`batch.data.slice()`; `cacheLoader` does). Needs `ordered`. Undefined: every batch
   * is a new buffer that the clips are copied into, and batches live as long as you keep them.
   * @default undefined
   */
  slots?: number;
  /** The epoch the first iteration runs (default 0), e.g. to resume a job where it stopped. */
  firstEpoch?: number;
  /**
   * A clip that cannot be loaded (fetch, demux or decode fails, no frame in its window, too much padding):
   * `"replace"` (default) fills its place with another clip of this rank's epoch plan, chosen
   * deterministically, so batches stay full; `"skip"` leaves its batch one clip short; `"fail"` ends the epoch
   * with the clip's error. Every case is counted in `stats().clips`.
   */
  onClipError?: OnClipError;
  /** HTTP retries, backoff and timeout. */
  fetch?: Omit<FetchOptions, "signal" | "range">;
  /**
   * Failed clips an epoch tolerates before it ends with an error (replaced ones count): a number, or a rate of
   * the clips finished so far once `after` clips finished. Default `{ rate: 0.5, after: 20 }`.
   */
  maxFailures?: MaxFailures;
  /**
   * Receivers of the loader pipeline's stats (every `reportInterval` ms while an epoch runs, and once as each
   * ends) and events (clip failures, stalls, concurrency changes); e.g. `jsonlStatsHook(path)`. With the
   * subprocess backend they see this process's pipeline, whose rows include the backend source; the child's
   * own stats are in `loader.stats().backend`.
   */
  hooks?: PipelineHook[];
  /** Milliseconds between reports to `hooks` (the pipeline's default, 10000, when omitted). */
  reportInterval?: number;
  /** Where failure and info lines go (default `console.error`). */
  log?: (line: string) => void;
  /** Decoding less: skipping unshown frames, one pass for several clips, idle cores as threads (all on). */
  decodeLess?: DecodeLessOptions;
}

/** Throws `InvalidArgumentError` naming the first option out of range; see {@link LoaderOptions}. */
export function checkLoaderOptions(opts: LoaderOptions): void {
  int("batchSize", opts.batchSize, 1, 65536);
  if (opts.clip === null || typeof opts.clip !== "object") {
    throw new InvalidArgumentError("loader: clip must be an object with numFrames, width and height");
  }
  oneOf("layout", opts.layout, ["BTHWC", "BCTHW"]);
  oneOf("decode", opts.decode, ["cpu", "nvdec", "auto"]);
  oneOf("backend", opts.backend, ["inprocess", "subprocess"]);
  oneOf("onClipError", opts.onClipError, ["replace", "skip", "fail"]);
  for (const [k, v] of Object.entries(opts.concurrency ?? {})) {
    if (v === undefined || v === "auto") continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 256) {
      throw new InvalidArgumentError(
        `loader: concurrency.${k} must be an integer in [1, 256] or "auto", got ${show(v)}`,
      );
    }
  }
  if (opts.bufferSize !== undefined) int("bufferSize", opts.bufferSize, 1, 1024);
  if (opts.firstEpoch !== undefined) int("firstEpoch", opts.firstEpoch, 0, Number.MAX_SAFE_INTEGER);
  if (opts.slots !== undefined) {
    int("slots", opts.slots, 1, 1024);
    if (opts.ordered === false) {
      throw new InvalidArgumentError("loader: slots needs ordered output (each clip's place is planned)");
    }
  }
  const dl = opts.decodeLess ?? {};
  for (const k of ["skip", "once", "threads"] as const) {
    if (dl[k] !== undefined && typeof dl[k] !== "boolean") {
      throw new InvalidArgumentError(`loader: decodeLess.${k} must be true or false, got ${dl[k]}`);
    }
  }
  if (dl.onceMemory !== undefined) int("decodeLess.onceMemory", dl.onceMemory, 0, Number.MAX_SAFE_INTEGER);
  const mf = opts.maxFailures;
  if (typeof mf === "number") int("maxFailures", mf, 0, Number.MAX_SAFE_INTEGER);
  else if (mf !== undefined) {
    range("maxFailures.rate", mf.rate, 0, 1);
    int("maxFailures.after", mf.after, 0, Number.MAX_SAFE_INTEGER);
  }
}

/** The `ClipSpec` of the `clip` options and the batch layout, defaults applied; throws on an option out of range. */
export function resolveClipSpec(clip: ClipOptions, layout: BatchLayout = "BTHWC"): ClipSpec {
  const c = clip;
  int("clip.numFrames", c.numFrames, 1, 10000);
  int("clip.width", c.width, 1, 16384);
  int("clip.height", c.height, 1, 16384);
  oneOf("clip.sampling", c.sampling, ["consecutive", "rate", "uniform", "stride"]);
  const kind = c.sampling ??
    (c.frameRate !== undefined ? "rate" : c.stride !== undefined ? "stride" : "consecutive");
  if (c.frameRate !== undefined && kind !== "rate") {
    throw new InvalidArgumentError(
      `loader: clip.frameRate applies to sampling "rate" only (sampling is "${kind}")`,
    );
  }
  if (c.stride !== undefined && kind !== "stride") {
    throw new InvalidArgumentError(
      `loader: clip.stride applies to sampling "stride" only (sampling is "${kind}")`,
    );
  }
  let sampling: FrameSampling;
  if (kind === "rate") {
    if (c.frameRate === undefined) {
      throw new InvalidArgumentError(`loader: sampling "rate" needs clip.frameRate`);
    }
    range("clip.frameRate", c.frameRate, 0, 1000, true);
    sampling = { kind, frameRate: c.frameRate };
  } else if (kind === "stride") {
    if (c.stride === undefined) throw new InvalidArgumentError(`loader: sampling "stride" needs clip.stride`);
    int("clip.stride", c.stride, 1, 1000);
    sampling = { kind, stride: c.stride };
  } else {
    sampling = { kind };
  }
  oneOf("clip.resize", c.resize, ["stretch", "short-side", "random-crop", "random-resized-crop"]);
  oneOf("clip.interpolation", c.interpolation, ["bilinear", "bicubic", "area"]);
  oneOf("clip.dtype", c.dtype, ["uint8", "float32"]);
  const scale = c.scale ?? [0.08, 1];
  const ratio = c.ratio ?? [3 / 4, 4 / 3];
  if (!pair(scale) || !(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1)) {
    throw new InvalidArgumentError(
      `loader: clip.scale must be [min, max] with 0 < min <= max <= 1, got ${show(c.scale)}`,
    );
  }
  if (!pair(ratio) || !(ratio[0] > 0 && ratio[0] <= ratio[1] && Number.isFinite(ratio[1]))) {
    throw new InvalidArgumentError(
      `loader: clip.ratio must be [min, max] with 0 < min <= max, got ${show(c.ratio)}`,
    );
  }
  if (c.flipProbability !== undefined) range("clip.flipProbability", c.flipProbability, 0, 1);
  if (c.maxPadFraction !== undefined) range("clip.maxPadFraction", c.maxPadFraction, 0, 1);
  if (c.rotate !== undefined && typeof c.rotate !== "boolean") {
    throw new InvalidArgumentError(`loader: clip.rotate must be true or false, got ${show(c.rotate)}`);
  }
  const dtype = c.dtype ?? "uint8";
  if (dtype !== "float32" && (c.mean !== undefined || c.std !== undefined)) {
    throw new InvalidArgumentError(`loader: clip.mean and clip.std apply to dtype "float32" only`);
  }
  const mean = c.mean ?? [0, 0, 0], std = c.std ?? [1, 1, 1];
  if (!triple(mean) || !mean.every(Number.isFinite)) {
    throw new InvalidArgumentError(
      `loader: clip.mean must be 3 finite numbers (R, G, B), got ${show(c.mean)}`,
    );
  }
  if (!triple(std) || !std.every((x) => x > 0 && Number.isFinite(x))) {
    throw new InvalidArgumentError(`loader: clip.std must be 3 numbers > 0 (R, G, B), got ${show(c.std)}`);
  }
  return {
    numFrames: c.numFrames,
    sampling,
    width: c.width,
    height: c.height,
    resize: c.resize ?? "stretch",
    scale: [scale[0], scale[1]],
    ratio: [ratio[0], ratio[1]],
    flipProbability: c.flipProbability ?? 0,
    interpolation: c.interpolation ?? "bilinear",
    planar: layout === "BCTHW",
    dtype,
    mean: [mean[0], mean[1], mean[2]],
    std: [std[0], std[1], std[2]],
    rotate: c.rotate ?? true,
    maxPadFraction: c.maxPadFraction ?? 0.5,
  };
}

/**
 * The default clip window: the time `numFrames` frames take at the slowest indexed video's rate (25 fps when
 * none is known), `× stride`, or at `frameRate`; `Infinity` (the whole video) for `"uniform"` sampling.
 */
export function defaultClipDuration(spec: ClipSpec, videoRates: readonly number[]): number {
  const s = spec.sampling;
  if (s.kind === "uniform") return Infinity;
  if (s.kind === "rate") return spec.numFrames / s.frameRate;
  const known = videoRates.filter((r) => r > 0);
  const rate = known.length > 0 ? Math.min(...known) : 25;
  return spec.numFrames * (s.kind === "stride" ? s.stride : 1) / rate;
}

function int(name: string, v: unknown, min: number, max: number): void {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    const hi = max === Number.MAX_SAFE_INTEGER ? "∞)" : `${max}]`;
    throw new InvalidArgumentError(`loader: ${name} must be an integer in [${min}, ${hi}, got ${show(v)}`);
  }
}

function range(name: string, v: unknown, min: number, max: number, openMin = false): void {
  if (typeof v !== "number" || !(openMin ? v > min : v >= min) || !(v <= max)) {
    throw new InvalidArgumentError(
      `loader: ${name} must be a number in ${openMin ? "(" : "["}${min}, ${max}], got ${show(v)}`,
    );
  }
}

function oneOf(name: string, v: unknown, values: string[]): void {
  if (v !== undefined && !values.includes(v as string)) {
    throw new InvalidArgumentError(
      `loader: ${name} must be one of ${values.map((x) => `"${x}"`).join(", ")}, got ${show(v)}`,
    );
  }
}

function pair(v: unknown): v is [number, number] {
  return Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "number");
}

function triple(v: unknown): v is [number, number, number] {
  return Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === "number");
}

function show(v: unknown): string {
  return typeof v === "string" ? `"${v}"` : Array.isArray(v) ? `[${v.join(", ")}]` : String(v);
}
