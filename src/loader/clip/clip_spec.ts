/**
 * What one training clip is: how its frames are chosen inside its time window and how its pixels are
 * transformed on their way into a batch. The loader builds a {@link ClipSpec} once from its options, at
 * their door (`resolveLoaderOptions`, through `clipSpecOf` in `clip_options.ts`); the decode Workers
 * (`clip_worker.ts`, CPU and NVDEC alike) follow it for every clip; a clip's {@link ClipOutcome} says exactly
 * what it holds.
 *
 * Frame choice is `src/media/frame_select.ts` (the one rule both decoders follow); the region each resize mode
 * keeps is `src/media/crop.ts`; the pixels are written by `src/media/frame_writer.ts`.
 * @module
 */

import type { FrameSampling } from "../../media/frame_select.ts";
import type { ResizeMode } from "../../media/crop.ts";
import type { AudioSpec, AudioStatus } from "../../media/audio.ts";

export type { AudioSpec, AudioStatus, FrameSampling, ResizeMode };

/** Output sample type: bytes as decoded, or `float32` normalised per channel as `(x / 255 - mean) / std`. */
export type ClipDtype = "uint8" | "float32";

/** swscale interpolation used to resize. */
export type Interpolation = "bilinear" | "bicubic" | "area";

/** Everything that decides a clip's frames and pixels; JSON-compatible (it crosses Workers and processes). */
export interface ClipSpec {
  /** Frames per clip: every clip has exactly this many (padding counted), or fails. */
  numFrames: number;
  /**
   * The decoder its decode Worker uses (the loader's `decode`, resolved; default `"cpu"`): the Worker takes it
   * from here (`decode/devices.ts`).
   */
  decoder?: "cpu" | "nvdec";
  /** NVDEC: the CUDA device that decodes (the loader's `device`; default 0). */
  device?: number;
  /** Which frames of the window fill the clip (see `frame_select.ts`). Default `{ kind: "consecutive" }`. */
  sampling: FrameSampling;
  /** Output size of each frame, as displayed. */
  width: number;
  /** See `width`. */
  height: number;
  /** Default `"stretch"`. */
  resize: ResizeMode;
  /** `"random-resized-crop"` only: fraction of the frame's area, `[min, max]`. Default `[0.08, 1]`. */
  scale: [number, number];
  /** `"random-resized-crop"` only: aspect ratio (width / height) range, `[min, max]`. Default `[3/4, 4/3]`. */
  ratio: [number, number];
  /** Probability of mirroring a clip horizontally (all its frames alike). Default 0. */
  flipProbability: number;
  /** Default `"bilinear"` (the ffmpeg CLI's `scale=W:H:flags=bilinear`, byte for byte). */
  interpolation: Interpolation;
  /** Packed `[T, H, W, 3]` (false, default) or planar `[T, 3, H, W]` (true) frames. */
  planar: boolean;
  /** Default `"uint8"`. */
  dtype: ClipDtype;
  /** `float32` only: per-channel (R, G, B) mean and standard deviation, on the `[0, 1]` scale. */
  mean: [number, number, number];
  /** See `mean`. */
  std: [number, number, number];
  /**
   * Apply the video's display rotation so frames look as a player shows them (true, default) or keep coded
   * pixels (false).
   */
  rotate: boolean;
  /**
   * A clip whose padding (positions beyond the end of the stream: its window runs past the last frame) would exceed
   * this fraction of `numFrames` fails; held frames (a frame still on screen) are not padding. Default 0.5.
   */
  maxPadFraction: number;
  /**
   * Each clip's audio too (`src/media/audio.ts`): `samples` per clip, from `round(start · sampleRate)` on, at
   * `sampleRate`, mixed to `channels`. Absent: no audio.
   */
  audio?: AudioSpec & { samples: number };
}

/** What one position of a clip is (see `ClipOutcome.frameKind`). */
export type FrameKind = "sampled" | "held" | "padded";

/**
 * Where a clip's frames came from and what was done to them: the decode Workers return it as
 * `DecodedClip.outcome`; `collate` merges it into the clip's `ClipMeta`.
 */
export interface ClipOutcome {
  /** Presentation time of each output frame, seconds (grid kinds: the position's time; repeats repeat the last). */
  pts: number[];
  /**
   * The index of each output frame in the video stream's presentation order (0 is its first frame, as ffprobe
   * lists them), exact wherever the clip's window lies: maps a prediction back to the source frame, and lets two
   * decoders' clips be compared frame for frame. Repeats repeat the last. Null when the container's timestamps
   * cannot tell (see docs/clips.md), never guessed.
   */
  frameIndex: number[] | null;
  /**
   * What each position is: `"sampled"` (the frame the sampling picked), `"held"` (a repeat of the last one, still on
   * screen: see `held`) or `"padded"` (a repeat beyond the end of the stream: see `padded`).
   */
  frameKind: FrameKind[];
  /**
   * Positions after the sampled ones that repeat the last frame while it is still on screen: the stream goes on past
   * the window's end (e.g. counting 16 frames inside a gap of a variable-frame-rate recording, where one frame is
   * on screen). Nothing is missing: they are not padding.
   */
  held: number;
  /**
   * Positions that repeat the last frame beyond the end of the stream (the window runs past it; at most
   * `maxPadFraction · numFrames`).
   */
  padded: number;
  /**
   * Time range the clip's frames cover, seconds: from the first frame's time to the end of the last one shown
   * (its time plus one step of the sampling: `1/fps` of the video for `"consecutive"`, `stride/fps` for
   * `"stride"`, `1/frameRate` for `"rate"`, `(end − start)/numFrames` for `"uniform"`).
   */
  span: [number, number];
  /** Display rotation of the video in degrees (counter-clockwise, as ffprobe reports) and whether applied. */
  rotation: number;
  /** Whether `rotation` was applied (`rotate` and a non-zero rotation). */
  rotated: boolean;
  /** Source region taken from each (rotated) frame before resizing: `[x, y, width, height]` in pixels. */
  crop: [number, number, number, number];
  /** Whether the clip was mirrored left–right. */
  flipped: boolean;
  /**
   * Frames the decoder produced for this clip (decoding starts at the keyframe before the window). Clips served
   * by one decode pass (`passClips` > 1) share its frames: each reports an equal share (the first the remainder),
   * so sums over clips are the frames decoded.
   */
  decodedFrames: number;
  /** Frames left undecoded because no position shows them (non-reference frames before the window, or between the
   * frames a stride or resampling keeps); shared like `decodedFrames`. */
  skippedFrames: number;
  /** Clips served by the decode pass that served this one (1: decoded alone). */
  passClips: number;
  /**
   * With `audio`: whether the clip's audio is the track's (`"ok"`) or zeros where the video has no audio track
   * (`"missing"`), where the track does not reach (`"short"`), or where it cannot be decoded (`"error"`).
   */
  audio?: AudioStatus;
}
