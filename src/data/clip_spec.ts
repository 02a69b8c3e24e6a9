/**
 * What one training clip is: how its frames are chosen inside its time window and how its pixels are
 * transformed on their way into a batch. The loader (`loader.ts`) builds a {@link ClipSpec} once from its
 * options; the decode Workers (`clip_worker.ts`, CPU and NVDEC alike) follow it for every clip; a clip's
 * {@link ClipOutcome} says exactly what it holds.
 *
 * Types only: behaviour lives in `src/media` (frame selection, transforms) and `src/data` (sampling, batching).
 * @module
 */

/**
 * How a clip's `numFrames` frames are chosen from the frames presented in its window `[start, end)`:
 * - `"consecutive"`: the first `numFrames` frames at the video's own rate;
 * - `"rate"`: resampled to `frameRate` fps by presentation time (FFmpeg's `fps` filter, `round=near`);
 * - `"uniform"`: `numFrames` times spread evenly over the window (TSN-style), each showing the latest frame
 *   presented at or before it;
 * - `"stride"`: every `stride`-th frame at the video's own rate, starting with the first.
 */
export type FrameSampling =
  | { kind: "consecutive" }
  | { kind: "rate"; frameRate: number }
  | { kind: "uniform" }
  | { kind: "stride"; stride: number };

/**
 * How a frame becomes `width`×`height`:
 * - `"stretch"`: the whole frame scaled to the output size (aspect ratio not kept);
 * - `"short-side"`: shorter side scaled to fit, aspect kept, then a centre crop;
 * - `"random-crop"`: as `"short-side"`, but the crop is placed at random (one place for all frames of a clip);
 * - `"random-resized-crop"`: a random region covering `scale` of the frame's area with aspect ratio in `ratio`,
 *   scaled to the output size (one region for all frames of a clip).
 */
export type ResizeMode = "stretch" | "short-side" | "random-crop" | "random-resized-crop";

/** Output sample type: bytes as decoded, or `float32` normalised per channel as `(x / 255 - mean) / std`. */
export type ClipDtype = "uint8" | "float32";

/** swscale interpolation used to resize. */
export type Interpolation = "bilinear" | "bicubic" | "area";

/** Everything that decides a clip's frames and pixels; JSON-compatible (it crosses Workers and processes). */
export interface ClipSpec {
  numFrames: number;
  sampling: FrameSampling;
  width: number;
  height: number;
  resize: ResizeMode;
  /** `"random-resized-crop"` only: fraction of the frame's area, `[min, max]`. */
  scale: [number, number];
  /** `"random-resized-crop"` only: aspect ratio (width / height) range, `[min, max]`. */
  ratio: [number, number];
  /** Probability of mirroring a clip horizontally (all its frames alike). */
  flipProbability: number;
  interpolation: Interpolation;
  /** Packed `[T, H, W, 3]` (false) or planar `[T, 3, H, W]` (true) frames. */
  planar: boolean;
  dtype: ClipDtype;
  /** `float32` only: per-channel (R, G, B) mean and standard deviation, on the `[0, 1]` scale. */
  mean: [number, number, number];
  std: [number, number, number];
  /** Apply the video's display rotation so frames look as a player shows them (true) or keep coded pixels. */
  rotate: boolean;
  /** A clip whose padding (repeats of its last frame) would exceed this fraction of `numFrames` fails. */
  maxPadFraction: number;
}

/** Where a clip's frames came from and what was done to them (part of each clip's metadata). */
export interface ClipOutcome {
  /** Presentation time of each output frame, seconds (padding repeats the last). */
  pts: number[];
  /** Frames added by repeating the last one. */
  padded: number;
  /** Time range the clip's frames cover: first frame's time to the end of the last one shown, seconds. */
  span: [number, number];
  /** Display rotation of the video in degrees (counter-clockwise, as ffprobe reports) and whether applied. */
  rotation: number;
  rotated: boolean;
  /** Source region taken from each (rotated) frame before resizing: `[x, y, width, height]` in pixels. */
  crop: [number, number, number, number];
  flipped: boolean;
  /** Frames the decoder produced for this clip, and frames it skipped without decoding (see stats). */
  decodedFrames: number;
}
