/**
 * `ClipSampler`: decides, for every epoch and before it starts, which clips of which videos a rank loads and in
 * what order. Pure and seeded: the same seed, epoch, rank and world size always give the same plan, so a loader
 * can prefetch as far ahead as its buffers allow, and ranks of a distributed job agree without talking.
 *
 * An epoch plan is built in three steps:
 * 1. every video contributes `clipsPerVideo` items; the item list is shuffled with a PRNG seeded by
 *    `(seed, epoch)` (or kept in dataset order with `shuffle: false`). With `groupByVideo` (default true) the
 *    videos are shuffled and each video's clips stay next to each other, so a loader fetches and opens a video
 *    once for all its clips; with `groupByVideo: false` the clips themselves are shuffled;
 * 2. the list is sharded: rank `r` of `w` takes items `r, r + w, r + 2w, …`. So that every rank yields the same
 *    number of items per epoch, `remainder: "pad"` (default) repeats items from the start of the shuffled list
 *    until its length is a multiple of `w` (a few clips are seen twice per epoch), while `remainder: "drop"`
 *    drops the last `n mod w` items (a few clips are skipped in that epoch; a different few each epoch);
 * 3. each item gets its time window (`clipDurationSec` long) inside the video's range: `"uniform"` spreads the
 *    clips of a video evenly, `"random"` draws each start from a PRNG seeded by `(seed, epoch, video, clip)`
 *    (independent of the rank, so a padded duplicate is the same clip). With `keyframeAligned`, a start moves to
 *    a keyframe, so decoding starts where the clip starts and no frame is decoded only to be thrown away. A
 *    video's clips take distinct keyframes within an epoch (a random draw without replacement among those that
 *    leave room for the clip; for `"uniform"`, the nearest free one at or after the one at or before each exact
 *    start), so no window appears twice in one epoch of one video; clips beyond the number of fitting keyframes
 *    keep their exact (unaligned) starts.
 *
 * Each clip also gets a `seed` ({@link clipSeed} of `(seed, epoch, position)`) from which the decode Workers
 * derive its random crop and flip, so they too are the same in every run, in-process or in a backend child.
 *
 * `shuffleBuffer` is applied by the loader, not here: with `groupByVideo` a video's clips are adjacent in the
 * plan (one open of the file for all of them), and the loader interleaves the clips of different videos
 * through a seeded shuffle buffer of that many clips after demuxing (see `shuffle_buffer.ts`).
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { hashSeed, mulberry32, shuffleInPlace } from "./random.ts";

/** What the sampler needs to know about one video. */
export interface SampledVideo {
  /** Usable range of the video in seconds, `[start, end)`: its start... */
  start: number;
  /** ...and its end. */
  end: number;
  /** Keyframe times in seconds, ascending (needed only for `keyframeAligned`). */
  keyframes?: readonly number[];
}

/** Where clips are placed inside a video. */
export type ClipPlacement = "random" | "uniform";

/** How ranks are made equal when the item count is not a multiple of the world size. */
export type ShardRemainder = "pad" | "drop";

/** Options of a {@link ClipSampler}. */
export interface SamplerOptions {
  /** PRNG seed (default 0). */
  seed?: number;
  /** Shuffle item order per epoch (default true). */
  shuffle?: boolean;
  /** Keep a video's clips adjacent in the epoch order (default true); see the module docs. */
  groupByVideo?: boolean;
  /** Clips taken from each video per epoch (default 1). */
  clipsPerVideo?: number;
  /** Length of each clip in seconds; `Infinity` (default) takes the whole usable range. */
  clipDurationSec?: number;
  /** Clip placement (default "random"). */
  placement?: ClipPlacement;
  /** Start clips at keyframes (default false). Needs `keyframes` on the videos; falls back to exact starts. */
  keyframeAligned?: boolean;
  /** This process's rank (default: the `RANK` environment variable, else 0). */
  rank?: number;
  /** Number of ranks (default: the `WORLD_SIZE` environment variable, else 1). */
  worldSize?: number;
  /** Make ranks equal by padding (default) or dropping; see the module docs. */
  remainder?: ShardRemainder;
  /**
   * Clips the loader's shuffle buffer holds to interleave the clips of different videos (see the module docs).
   * 0 turns it off. Costs that many demuxed (compressed) clips of memory.
   * @default {max(64, 8 × clipsPerVideo) with shuffle and groupByVideo, else 0}
   */
  shuffleBuffer?: number;
}

/** One clip a rank must load. */
export interface ClipRequest {
  /** Position of this clip in the rank's epoch (0-based). */
  position: number;
  /** Index of the video in the dataset. */
  video: number;
  /** Which of the video's `clipsPerVideo` clips this is. */
  clip: number;
  /** Time window in seconds, `[start, end)`: its start... */
  start: number;
  /** ...and its end. */
  end: number;
  /** The clip's own seed for random transforms: {@link clipSeed}`(seed, epoch, position)`. */
  seed: number;
}

/** Sampler state resolved from options and environment. */
export interface ResolvedSamplerOptions {
  /** See {@link SamplerOptions.seed}. */
  seed: number;
  /** See {@link SamplerOptions.shuffle}. */
  shuffle: boolean;
  /** See {@link SamplerOptions.groupByVideo}. */
  groupByVideo: boolean;
  /** See {@link SamplerOptions.clipsPerVideo}. */
  clipsPerVideo: number;
  /** See {@link SamplerOptions.clipDurationSec}. */
  clipDurationSec: number;
  /** See {@link SamplerOptions.placement}. */
  placement: ClipPlacement;
  /** See {@link SamplerOptions.keyframeAligned}. */
  keyframeAligned: boolean;
  /** See {@link SamplerOptions.rank}. */
  rank: number;
  /** See {@link SamplerOptions.worldSize}. */
  worldSize: number;
  /** See {@link SamplerOptions.remainder}. */
  remainder: ShardRemainder;
  /** See {@link SamplerOptions.shuffleBuffer}. */
  shuffleBuffer: number;
}

/** Plans epochs of clips; see the module docs. */
export class ClipSampler {
  /** The options in force, after defaults and environment. */
  readonly options: Readonly<ResolvedSamplerOptions>;
  readonly #videos: readonly SampledVideo[];

  /**
   * Resolves the options (defaults, `RANK` and `WORLD_SIZE`) and checks the videos' ranges.
   * @param videos what the sampler needs to know of each video (range, keyframes)
   * @param opts sampling, shuffling and sharding
   */
  constructor(videos: readonly SampledVideo[], opts: SamplerOptions = {}) {
    this.options = resolveOptions(opts);
    for (const [i, v] of videos.entries()) {
      if (!(v.end > v.start) || !Number.isFinite(v.start) || !Number.isFinite(v.end)) {
        throw new InvalidArgumentError(
          `sampler: video ${i} has an empty or invalid range [${v.start}, ${v.end})`,
        );
      }
    }
    this.#videos = videos;
  }

  /** Items each rank yields per epoch (the same for every rank and every epoch). */
  get length(): number {
    const n = this.#videos.length * this.options.clipsPerVideo;
    const w = this.options.worldSize;
    return this.options.remainder === "pad" ? Math.ceil(n / w) : Math.floor(n / w);
  }

  /** The full plan of `epoch` for this rank, in loading order. */
  epoch(epoch: number): ClipRequest[] {
    if (!Number.isInteger(epoch) || epoch < 0) {
      throw new InvalidArgumentError(`sampler: epoch must be a non-negative integer, got ${epoch}`);
    }
    const o = this.options;
    const order = this.#order(epoch);
    const out: ClipRequest[] = [];
    for (let k = o.rank, position = 0; position < this.length; k += o.worldSize, position++) {
      const item = order[k % order.length];
      const video = Math.floor(item / o.clipsPerVideo);
      const clip = item % o.clipsPerVideo;
      const [start, end] = this.#window(epoch, video, clip);
      out.push({ position, video, clip, start, end, seed: clipSeed(o.seed, epoch, position) });
    }
    return out;
  }

  /** Shuffled item ids (video * clipsPerVideo + clip) for the whole dataset. */
  #order(epoch: number): number[] {
    const { clipsPerVideo: k, shuffle, groupByVideo, seed } = this.options;
    const rand = mulberry32(hashSeed(seed, epoch));
    if (groupByVideo) {
      const videos = Array.from({ length: this.#videos.length }, (_, i) => i);
      if (shuffle) shuffleInPlace(videos, rand);
      return videos.flatMap((v) => Array.from({ length: k }, (_, c) => v * k + c));
    }
    const order = Array.from({ length: this.#videos.length * k }, (_, i) => i);
    if (shuffle) shuffleInPlace(order, rand);
    return order;
  }

  #window(epoch: number, video: number, clip: number): [number, number] {
    const o = this.options;
    const v = this.#videos[video];
    const d = Math.min(o.clipDurationSec, v.end - v.start);
    const slack = v.end - v.start - d;
    const keys = o.keyframeAligned ? fitting(v, d) : [];
    let start: number;
    if (o.placement === "uniform") {
      const k = o.clipsPerVideo;
      const exact = (c: number) => v.start + slack * (k === 1 ? 0.5 : c / (k - 1));
      start = exact(clip);
      if (keys.length > 0) {
        // The clips before this one took keyframes in the same greedy pass: nearest at or before, else the next free.
        let taken = -1;
        for (let c = 0; c <= clip && taken < keys.length; c++) {
          taken = Math.max(lastAtOrBefore(keys, exact(c)), taken + 1, 0);
        }
        if (taken < keys.length) start = keys[taken];
      }
    } else if (clip < keys.length) {
      // A draw without replacement: clip c of the video takes the c-th keyframe of a seeded permutation.
      const order = shuffleInPlace(
        keys.map((_, i) => i),
        mulberry32(hashSeed(o.seed, epoch, video, KEYFRAME_DRAW)),
      );
      start = keys[order[clip]];
    } else {
      start = v.start + slack * mulberry32(hashSeed(o.seed, epoch, video, clip))();
    }
    return [start, Math.min(start + d, v.end)];
  }
}

/** Seed-part tag of the per-video keyframe permutation (keeps it apart from the per-clip draws). */
const KEYFRAME_DRAW = 0x6b657966;

/**
 * The seed of the clip at `position` of a rank's `epoch` (`attempt` 0), or of the `attempt`-th substitute the
 * loader tries in that position when the clip fails; the decode Workers derive the clip's crop and flip from it.
 */
export function clipSeed(seed: number, epoch: number, position: number, attempt = 0): number {
  return hashSeed(seed, epoch, position, attempt);
}

/** Keyframes inside `[start, end - d]` (a little tolerance for float rounding). */
function fitting(v: SampledVideo, d: number): number[] {
  const eps = 1e-6;
  return (v.keyframes ?? []).filter((t) => t >= v.start - eps && t + d <= v.end + eps);
}

function lastAtOrBefore(sorted: readonly number[], t: number): number {
  let lo = 0, hi = sorted.length - 1, found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] <= t + 1e-9) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

function resolveOptions(opts: SamplerOptions): ResolvedSamplerOptions {
  const rank = opts.rank ?? envInt("RANK") ?? 0;
  const worldSize = opts.worldSize ?? envInt("WORLD_SIZE") ?? 1;
  const o: ResolvedSamplerOptions = {
    seed: opts.seed ?? 0,
    shuffle: opts.shuffle ?? true,
    groupByVideo: opts.groupByVideo ?? true,
    clipsPerVideo: opts.clipsPerVideo ?? 1,
    clipDurationSec: opts.clipDurationSec ?? Infinity,
    placement: opts.placement ?? "random",
    keyframeAligned: opts.keyframeAligned ?? false,
    rank,
    worldSize,
    remainder: opts.remainder ?? "pad",
    shuffleBuffer: 0,
  };
  const shuffled = o.shuffle && o.groupByVideo;
  o.shuffleBuffer = opts.shuffleBuffer ?? (shuffled ? Math.max(64, 8 * o.clipsPerVideo) : 0);
  if (!Number.isInteger(o.shuffleBuffer) || o.shuffleBuffer < 0) {
    throw new InvalidArgumentError(
      `sampler: shuffleBuffer must be an integer >= 0 (0: off), got ${o.shuffleBuffer}`,
    );
  }
  if (!Number.isInteger(o.worldSize) || o.worldSize < 1) {
    throw new InvalidArgumentError(`sampler: worldSize must be a positive integer, got ${o.worldSize}`);
  }
  if (!Number.isInteger(o.rank) || o.rank < 0 || o.rank >= o.worldSize) {
    throw new InvalidArgumentError(`sampler: rank must be an integer in [0, ${o.worldSize}), got ${o.rank}`);
  }
  if (!Number.isInteger(o.clipsPerVideo) || o.clipsPerVideo < 1) {
    throw new InvalidArgumentError(
      `sampler: clipsPerVideo must be a positive integer, got ${o.clipsPerVideo}`,
    );
  }
  if (!(o.clipDurationSec > 0)) {
    throw new InvalidArgumentError(`sampler: clipDurationSec must be > 0, got ${o.clipDurationSec}`);
  }
  if (o.placement !== "random" && o.placement !== "uniform") {
    throw new InvalidArgumentError(`sampler: placement must be "random" or "uniform", got "${o.placement}"`);
  }
  if (o.remainder !== "pad" && o.remainder !== "drop") {
    throw new InvalidArgumentError(`sampler: remainder must be "pad" or "drop", got "${o.remainder}"`);
  }
  return o;
}

/** Reads an integer environment variable (RANK, WORLD_SIZE); undefined when unset or not permitted. */
function envInt(name: string): number | undefined {
  let v: string | undefined;
  try {
    v = Deno.env.get(name);
  } catch {
    return undefined;
  }
  if (v === undefined || v.trim() === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) {
    throw new InvalidArgumentError(`sampler: environment ${name}="${v}" is not an integer`);
  }
  return n;
}
