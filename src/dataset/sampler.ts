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
import type { OptionMessagePart } from "../errors.ts";
import { optionError, type OptionTable, resolveTable, tsVocabulary } from "../options.ts";
import type { OptionsDisagreement, ResolvedOf } from "../option_types.ts";
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

/**
 * Options of a {@link ClipSampler}; their kinds, ranges and defaults are {@link SAMPLER_OPTIONS}'s (docs/loader.md,
 * "Options, declared once").
 */
export interface SamplerOptions {
  /** PRNG seed: the same seed gives the same epochs. */
  seed?: number;
  /** Shuffle item order per epoch. */
  shuffle?: boolean;
  /** Keep a video's clips adjacent in the epoch order; see the module docs. */
  groupByVideo?: boolean;
  /** Clips taken from each video per epoch. */
  clipsPerVideo?: number;
  /** Length of each clip in seconds; `Infinity` takes the whole usable range. */
  clipDurationSec?: number;
  /** Clip placement. */
  placement?: ClipPlacement;
  /** Start clips at keyframes. Needs `keyframes` on the videos; falls back to exact starts. */
  keyframeAligned?: boolean;
  /** This process's rank (default: the `RANK` environment variable, else 0). */
  rank?: number;
  /** Number of ranks (default: the `WORLD_SIZE` environment variable, else 1). */
  worldSize?: number;
  /** Make ranks equal by padding or dropping; see the module docs. */
  remainder?: ShardRemainder;
  /**
   * Clips the loader's shuffle buffer holds to interleave the clips of different videos (see the module docs).
   * 0 turns it off. Costs that many demuxed (compressed) clips of memory.
   */
  shuffleBuffer?: number;
}

/** The sampler's options, declared once: {@link ClipSampler} checks against it, the loader's table holds it. */
export const SAMPLER_OPTIONS = {
  seed: {
    kind: "integer",
    min: 0,
    default: 0,
    doc: "seed of the epochs' order, windows and random transforms",
    flag: "seed",
    python: "seed",
  },
  shuffle: { kind: "boolean", default: true, doc: "shuffle the clips' order each epoch", python: "shuffle" },
  groupByVideo: {
    kind: "boolean",
    default: true,
    doc: "keep a video's clips next to each other in an epoch (one open of the file for all)",
    python: "group_by_video",
  },
  clipsPerVideo: {
    kind: "integer",
    min: 1,
    default: 1,
    doc: "clips taken from each video per epoch",
    flag: "clips-per-video",
    python: "clips_per_video",
  },
  clipDurationSec: {
    kind: "number",
    above: 0,
    infinity: true,
    default: Infinity,
    defaultText: "the whole video",
    doc: "seconds of video each clip is taken from",
    flag: "clip-duration",
    python: "clip_duration",
  },
  placement: {
    kind: "enum",
    values: ["random", "uniform"],
    default: "random",
    doc: "where clips are placed in a video: at random, or spread evenly",
    flag: "placement",
    python: "placement",
  },
  keyframeAligned: {
    kind: "boolean",
    default: false,
    doc: "start clips at keyframes (cheaper seeks)",
    flag: "keyframe-aligned",
    python: "keyframe_aligned",
  },
  rank: { kind: "integer", min: 0, defaultText: "$RANK, else 0", doc: "this process's rank", python: "rank" },
  worldSize: {
    kind: "integer",
    min: 1,
    defaultText: "$WORLD_SIZE, else 1",
    doc: "number of ranks",
    python: "world_size",
  },
  remainder: {
    kind: "enum",
    values: ["pad", "drop"],
    default: "pad",
    doc: "make ranks' epochs equal by repeating a few clips (pad) or leaving a few out (drop)",
    python: "remainder",
  },
  shuffleBuffer: {
    kind: "integer",
    min: 0,
    defaultText: "max(64, 8 × clips per video) with shuffle, group by video and 2+ clips per video, else 0",
    doc: "clips the loader's shuffle buffer holds to interleave videos (0: off)",
    python: "shuffle_buffer",
  },
} as const satisfies OptionTable;

// SamplerOptions is this table written for its readers: an option the two do not write the same (missing from one, or of
// another type) fails `deno task check` here, naming it.
const _agrees: Record<OptionsDisagreement<SamplerOptions, typeof SAMPLER_OPTIONS>, never> = {};

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

/**
 * Plans epochs of clips; see the module docs. A loader's is `loader.sampler`.
 * @example Two clips of each of two videos, one epoch
 * ```ts
 * import { ClipSampler } from "@sluice/sluice";
 *
 * const videos = [{ start: 0, end: 10 }, { start: 0, end: 4 }];
 * const sampler = new ClipSampler(videos, { seed: 0, clipsPerVideo: 2, clipDurationSec: 1 });
 * for (const clip of sampler.epoch(0)) console.log(clip.video, clip.start, clip.end);
 * ```
 */
export class ClipSampler {
  /** The options in force, after defaults and environment. */
  readonly options: Readonly<ResolvedSamplerOptions>;
  readonly #videos: readonly SampledVideo[];

  /**
   * Resolves the options (defaults, `RANK` and `WORLD_SIZE`) and checks the videos' ranges.
   * @param videos what the sampler needs to know of each video (range, keyframes)
   * @param opts sampling, shuffling and sharding
   * @throws {InvalidArgumentError} for an option out of range or a video whose range is empty
   */
  constructor(videos: readonly SampledVideo[], opts: SamplerOptions = {}) {
    const given = opts as SamplerOptions & { [RESOLVED]?: ResolvedSamplerOptions };
    this.options = given[RESOLVED] ?? resolveSamplerOptions(opts);
    for (const [i, v] of videos.entries()) {
      if (!(v.end > v.start) || !Number.isFinite(v.start) || !Number.isFinite(v.end)) {
        throw new InvalidArgumentError(
          `sampler: video ${i} has an empty or invalid range [${v.start}, ${v.end})`,
        );
      }
    }
    this.#videos = videos;
  }

  /**
   * A sampler with options resolved at a door (the loader's, {@link samplerFromEnv}), which are not checked
   * again: the loader's front, its replacements and each rank of a node server plan with the loader's.
   * @param videos the videos to sample, as for the constructor
   * @param options the sampler's options in force
   * @returns the sampler
   * @throws {InvalidArgumentError} for a video whose range is empty
   */
  static fromResolved(videos: readonly SampledVideo[], options: ResolvedSamplerOptions): ClipSampler {
    return new ClipSampler(videos, { [RESOLVED]: options } as SamplerOptions);
  }

  /** Items each rank yields per epoch (the same for every rank and every epoch). */
  get length(): number {
    const n = this.#videos.length * this.options.clipsPerVideo;
    const w = this.options.worldSize;
    return this.options.remainder === "pad" ? Math.ceil(n / w) : Math.floor(n / w);
  }

  /**
   * The full plan of `epoch` for this rank, in loading order.
   * @param epoch the epoch, from 0
   * @returns one request per clip: its video, window, position and seed
   * @throws {InvalidArgumentError} for an epoch that is not a non-negative integer
   */
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
 * @param seed the sampler's seed
 * @param epoch the epoch
 * @param position the clip's position in the rank's epoch
 * @param attempt 0 for the planned clip, k for its k-th substitute
 * @returns a 32-bit seed
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

/** Marks options {@link ClipSampler.fromResolved} hands its constructor: resolved already. */
const RESOLVED = Symbol("resolved sampler options");

/** The sampler's options as its table resolves them: `rank`, `worldSize` and `shuffleBuffer` may be left to decide. */
export type SamplerTableOptions = ResolvedOf<typeof SAMPLER_OPTIONS>;

/**
 * The door of a {@link ClipSampler}'s options: checked against {@link SAMPLER_OPTIONS}, defaults and the
 * environment (`RANK`, `WORLD_SIZE`) applied ({@link samplerFromEnv}). Throws `InvalidArgumentError` naming the
 * option.
 */
export function resolveSamplerOptions(opts: SamplerOptions): ResolvedSamplerOptions {
  return samplerFromEnv(resolveTable(SAMPLER_OPTIONS, opts, SAMPLER_WORDS));
}

const SAMPLER_WORDS = tsVocabulary("sampler: ");

/**
 * The sampler's options in force from options a door resolved (`resolveTable`, the loader's for its `sampler`
 * group): `rank` and `worldSize` from the environment (`RANK`, `WORLD_SIZE`) where not given, the shuffle
 * buffer's default, the rank checked against the world size. Throws `InvalidArgumentError` naming the option by
 * its path under `at` (`"sampler"` in the loader's options), or the environment variable it came from.
 */
export function samplerFromEnv(d: SamplerTableOptions, at = ""): ResolvedSamplerOptions {
  const rank = d.rank ?? envInt("RANK") ?? 0;
  const worldSize = d.worldSize ?? envInt("WORLD_SIZE") ?? 1;
  const shuffled = d.shuffle && d.groupByVideo;
  const o: ResolvedSamplerOptions = {
    seed: d.seed,
    shuffle: d.shuffle,
    groupByVideo: d.groupByVideo,
    clipsPerVideo: d.clipsPerVideo,
    clipDurationSec: d.clipDurationSec,
    placement: d.placement,
    keyframeAligned: d.keyframeAligned,
    rank,
    worldSize,
    remainder: d.remainder,
    // One clip per video: the shuffled plan has nothing to interleave, and a buffer only delays each epoch's start.
    shuffleBuffer: d.shuffleBuffer ??
      (shuffled && d.clipsPerVideo > 1 ? Math.max(64, 8 * d.clipsPerVideo) : 0),
  };
  // From the environment, the variable is named: the caller never wrote the option.
  const path = (k: "rank" | "worldSize") => at === "" ? k : `${at}.${k}`;
  const name = (k: "rank" | "worldSize"): OptionMessagePart =>
    d[k] !== undefined ? { option: path(k) } : k === "rank" ? "$RANK" : "$WORLD_SIZE";
  const door = { door: SAMPLER_WORDS.prefix };
  if (!Number.isSafeInteger(worldSize) || worldSize < 1) {
    const says = [door, name("worldSize"), " must be an integer >= 1, got ", { value: worldSize }];
    throw optionError(SAMPLER_WORDS, { option: path("worldSize"), value: worldSize, says });
  }
  if (!Number.isSafeInteger(rank) || rank < 0 || rank >= worldSize) {
    const says = [door, name("rank"), ` must be an integer from 0 to ${worldSize - 1} (`, name("worldSize")];
    says.push(` is ${worldSize}), got `, { value: rank });
    throw optionError(SAMPLER_WORDS, { option: path("rank"), value: rank, says });
  }
  return o;
}

/**
 * Reads an integer environment variable (RANK, WORLD_SIZE, LOCAL_RANK) for `what`; undefined when unset or not
 * permitted.
 */
export function envInt(name: string, what = "sampler"): number | undefined {
  let v: string | undefined;
  try {
    v = Deno.env.get(name);
  } catch {
    return undefined;
  }
  if (v === undefined || v.trim() === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) {
    throw new InvalidArgumentError(`${what}: environment ${name}="${v}" is not an integer`);
  }
  return n;
}
