/**
 * A clip's life in the loader, one shape per stage, in the order a clip lives them. Types only, below every wing
 * of the loader (the seams' implementations live in their wings):
 *
 * | # | shape | made where | what it holds | becomes |
 * | --- | --- | --- | --- | --- |
 * | 1 | `ClipRequest` (`src/dataset/sampler.ts`, below the loader) | `ClipSampler.epoch` | video, window, position, seed | 2 |
 * | 2 | {@link ClipBase} | `clipBase`, front | path, label, window, epoch, position, seed, fields | grouped into 3 |
 * | 3 | {@link VideoTask} | `epochSource`, front | one video's clips, its bytes after fetch, decode-once order | demux → 4 |
 * | 4 | {@link ClipPackets} (+ {@link SharedClip}, {@link ClipDestination}) | `demuxClips`, Worker | packets, or the demux failure, or `servedBy`; where to write | 5 |
 * | 5 | {@link ClipItem} = `ClipPackets` \| `FailedClip` | demux stage | the decode stage's item | decode → 6 or 7 |
 * | 6 | {@link DecodedClip} | `decodeClip`, Worker | samples, `outcome`, audio | replace → 8 |
 * | 7 | {@link FailedClip} ({@link ClipFailure}) | any step | the failure record | replace → 8 |
 * | 8 | {@link PlacedClip} | replace stage | the clip or none, and the failures tried | collate → 9 |
 * | 9 | {@link ClipMeta} (in `Batch.clips`) | `collate` | `ClipBase` + `ClipOutcome` | the consumer; accounting reads it |
 *
 * {@link ClipPlaces} is the seam between decode and batch: the decode steps ask it where a clip goes (its place
 * in a batch slot) without knowing the batch wing (`BatchSlots` implements it).
 * @module
 */

import type { ClipOutcome, ClipSpec } from "./clip_spec.ts";
import type { VideoPackets, VideoPacketsInit } from "../../media/packets.ts";
import type { FrameDestination } from "../../media/frame_writer.ts";
import type { ClipAudio } from "../../media/audio.ts";
import type { PhaseTimes } from "../../media/spans.ts";
import type { MemberRef } from "../../dataset/items.ts";

// ------------------------------------------------------------------------------------------ 2. planned

/** What a clip is before it is decoded: the loader plans it; the decode Workers add its {@link ClipOutcome}. */
export interface ClipBase {
  /** Video path or URL. */
  path: string;
  /** Index of the video in the dataset. */
  video: number;
  /** Class index (-1 when the dataset has no labels). */
  label: number;
  /** The window the sampler asked for, seconds (the frames cover `span`, see docs/clips.md): its start... */
  start: number;
  /** ...and its end. */
  end: number;
  /** The epoch of the plan (0-based). */
  epoch: number;
  /** The clip's position in this rank's plan of the epoch (a substitute keeps the failed clip's). */
  position: number;
  /** Seed of the clip's random transforms (crop, flip): the sampler's `clipSeed`. */
  seed: number;
  /** The manifest's other columns for this video (captions, multi-label ids, targets), when it has any. */
  fields?: Record<string, unknown>;
  /**
   * Set when this clip stands in for a planned clip that failed (`onClipError: "replace"`): that clip's
   * failure. The substitute keeps the failed clip's `position`; its own window is `start`/`end` of `path`.
   */
  replaces?: ClipFailure;
}

// ------------------------------------------------------------------------------------------ 3. a video's task

/** One video with the clips to cut from it, after fetching. */
export interface VideoTask {
  epoch: number;
  video: number;
  path: string;
  /** Each clip's metadata, window (`start`, `end`) and transform seed (`seed`) included, as the loader planned it. */
  clips: ClipBase[];
  /** The video is this member of the file at `path` (a tar shard). */
  member?: MemberRef;
  /** The bytes (URLs, after fetching) or the local path itself. */
  src?: Uint8Array | string;
  /** What each clip becomes (travels with each clip). */
  spec: ClipSpec;
  /**
   * Decode once for several clips (set by the loader's front): clips whose packets overlap are served by one
   * decode pass when their places in the epoch's output (`order[i]` for `clips[i]`: the index at which the clip
   * leaves the shuffle buffer) are at most `horizon` apart. Absent: every clip is decoded on its own.
   * `order[clips.length + j]` is `extras[j]`'s place.
   */
  share?: { order: number[]; horizon: number };
  /**
   * Decode once across rows (set by the loader's front): clips of other tasks of the same file that leave the
   * shuffle buffer after every clip of this one, offered to this task's passes. An extra is cut only into a
   * group one of `clips` opens (never on its own: `optionalFrom`) and gets no item here: the pass that serves
   * it lists it in `shared`, and its own task emits it with `servedBy`.
   */
  extras?: ClipBase[];
  /** Time the demux's phases (`clip_profile.ts`): they come back as the first clip's `phases`. */
  profile?: boolean;
}

// ------------------------------------------------------------------------------------------ 4, 5. demuxed

/** A clip decoded in another clip's pass: its metadata, its own packets in that pass, and its destination. */
export interface SharedClip {
  meta: ClipBase;
  /** Its own packets `[from, to)` within the pass's packets (exactly what demux cuts for its window alone). */
  range: [number, number];
  /** Where its frames go (see {@link ClipPackets.dest}); default: a new buffer. */
  dest?: ClipDestination;
  /** Its audio, decoded at demux (with `ClipSpec.audio`); checked before use (it may come from another process). */
  audio?: ClipAudio;
}

/**
 * A clip's place given by address: `length` bytes at `address` of this process (a batch slot's clip place,
 * {@link ClipPlaces.place}). The caller keeps the memory mapped while the clip decodes.
 */
export interface AddressedDestination {
  address: bigint;
  /** Bytes; must be exactly the clip's size (`numFrames × 3 × width × height × bytes per sample`). */
  length: number;
  /**
   * `address` is in the memory of this CUDA device (NVDEC only; a device batch slot), not of the process: the
   * clip is written there on the GPU.
   */
  device?: number;
  /** With `device`: the clip is laid out `[3, T, H, W]` (its part of a `"BCTHW"` batch). */
  planesFirst?: boolean;
}

/** Where a clip's frames go: a buffer (with an element offset) or an address. */
export type ClipDestination = FrameDestination | AddressedDestination;

/**
 * One clip after demux: its packets, or why its window could not be served, or (decoded once with other clips)
 * the pass that serves it.
 */
export interface ClipPackets {
  meta: ClipBase;
  spec: ClipSpec;
  /**
   * The packets its decode pass reads; absent when demux failed for this window (`failure` says why) or when
   * another clip's pass serves it (`servedBy`).
   */
  packets?: VideoPackets | VideoPacketsInit;
  failure?: string;
  /**
   * Write the frames here: `numFrames` frames of `3·width·height` elements from `offset` on, a `Float32Array`
   * for `dtype: "float32"`; or by address (a batch slot in shared memory, {@link AddressedDestination}), when
   * the clip comes back with empty `data`. Default: a new buffer per clip. A buffer given here (moved with the
   * item, e.g. one the loader reuses) comes back, moved, as the clip's `data`.
   */
  dest?: ClipDestination;
  /** Its own packets `[from, to)` within `packets` (default: all of them). */
  range?: [number, number];
  /** Its audio (with `ClipSpec.audio`), see {@link SharedClip.audio}. */
  audio?: ClipAudio;
  /**
   * The other clips the same pass serves (same video; their packets overlap this clip's): `decodeClip`
   * returns one result for each, after this clip's.
   */
  shared?: SharedClip[];
  /**
   * Set when the pass of the clip at this position (same epoch) serves this clip, which its `shared` lists: this
   * item carries no packets, its result comes with that clip's (see `ClipDecodeStep`).
   */
  servedBy?: number;
  /** Leave undecoded the frames no position shows (`DecodeOptions.skipUnshown`, default true; set by the decode step). */
  skipUnshown?: boolean;
  /** FFmpeg threads for the decoder (default 1; set by the decode step from the cores left idle). */
  threads?: number;
  /** Time the decode's phases (`clip_profile.ts`; set by the decode step): they come back as the clip's `phases`. */
  profile?: boolean;
  /** Times of the demux task that cut this clip's packets (on one clip of the task), for the profile. */
  phases?: PhaseTimes;
}

/** A clip on its way to the decode stage: its packets, or its failure. */
export type ClipItem = ClipPackets | FailedClip;

// ------------------------------------------------------------------------------------------ 6, 7. decoded or failed

/** One decoded clip, as the decode stage hands it on: exactly what its spec promises, and what it holds. */
export interface DecodedClip {
  /** What the loader planned for it. */
  meta: ClipBase;
  /** `numFrames × frameSize` samples: packed RGB (`[T, H, W, 3]`) or planar RGB (`[T, 3, H, W]`). */
  data: Uint8Array | Float32Array;
  /** Frame width in pixels. */
  width: number;
  /** Frame height in pixels. */
  height: number;
  /** What the clip holds (see `clip_spec.ts`). */
  outcome: ClipOutcome;
  /** Times of its decode task's phases, when profiled (`clip_profile.ts`); the decode step takes them off. */
  phases?: PhaseTimes;
  /** With `ClipSpec.audio`: its audio, planar `float32` `[channels, samples]`. */
  audio?: Float32Array;
  /** With `audio`: its channels. */
  audioChannels?: number;
}

/** Why one clip failed. */
export interface ClipFailure {
  /** Video path or URL. */
  path: string;
  /** Index of the video in the dataset. */
  video: number;
  /** The epoch of the plan (0-based). */
  epoch: number;
  /** The clip's position in the rank's plan of the epoch (a substitute's: the position it was to fill). */
  position: number;
  /** The window that was asked for, seconds: its start... */
  start: number;
  /** ...and its end. */
  end: number;
  /** Where it failed: `"fetch"`, `"demux"` or `"decode"` (or the stage the error itself names). */
  stage: string;
  /** The error's class name, e.g. `"MediaError"`. */
  errorName: string;
  /** The error as one line, `Name: message`, the file left out (it is `path`). */
  error: string;
  /** 0 for the planned clip; `k` for the `k`-th substitute tried in its position (see the loader's docs). */
  attempt: number;
}

/**
 * A clip that could not be loaded, travelling as a value in a clip's place (through a backend child too), so one
 * bad clip never takes other clips, or a batch, with it (`clip_failure.ts` makes it).
 */
export interface FailedClip {
  failed: ClipFailure;
}

// ------------------------------------------------------------------------------------------ 8. placed

/** One position of the plan after the replacement step: the clip for its batch, or none, and what failed. */
export interface PlacedClip {
  /** The position's own clip, a substitute (its `meta.replaces` is set), or null when it has none. */
  clip: DecodedClip | null;
  /** The planned clip's failure (attempt 0), then each failed substitute's, in the order they were tried. */
  failures: ClipFailure[];
}

// ------------------------------------------------------------------------------------------ 9. in a batch

/**
 * What one clip of a batch is: where it came from (`path`, the window the sampler asked for, its place in the
 * plan, its seed, the manifest's other columns) and what it holds ({@link ClipOutcome}: each frame's time,
 * padding, the time range its frames cover, rotation, crop and flip).
 */
export interface ClipMeta extends ClipBase, ClipOutcome {}

// ------------------------------------------------------------------------------------------ the batch seam

/**
 * Where the decode steps put a clip before its batch is assembled: its place in a batch slot, asked before it is
 * decoded, so the decode Worker writes there (`BatchSlots` implements it; the decode wing knows only this).
 */
export interface ClipPlaces {
  /** Decode Workers write into the places; false: each clip comes in its own buffer (collate regroups it). */
  readonly direct: boolean;
  /** The clip's place, acquiring its batch's slot first (in batch order, waiting for credit). */
  place(meta: Pick<ClipBase, "epoch" | "position">, signal?: AbortSignal): Promise<AddressedDestination>;
  /** The clip's place when its batch has a slot or can get one now without waiting; else undefined. */
  tryPlace(meta: ClipBase): AddressedDestination | undefined;
  /**
   * A decoded clip in its place: one decoded there comes back viewing it; one decoded into its own buffer is
   * copied there, its buffer then given to `recycle` (default: freed).
   */
  adopt(
    clip: DecodedClip,
    signal?: AbortSignal,
    recycle?: (buffer: ArrayBuffer) => void,
  ): Promise<DecodedClip>;
}
